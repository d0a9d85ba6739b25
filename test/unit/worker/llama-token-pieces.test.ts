import { describe, expect, it } from 'vitest';
import { tokenTextBytes } from '../../../src/worker/llama-token-pieces.ts';

const bytes = (text: string, byteLevel: boolean) => {
  const b = tokenTextBytes(text, byteLevel);
  return b ? [...b] : null;
};

describe('tokenTextBytes', () => {
  it('reads a byte token', () => {
    expect(bytes('<0xE2>', false)).toEqual([0xe2]);
    expect(bytes('<0x0A>', true)).toEqual([0x0a]);
    expect(bytes('<0xe2>', false)).toEqual([0xe2]);
  });

  it('reads GPT-2 byte-level texts back to their bytes', () => {
    expect(bytes('Ġhello', true)).toEqual([...Buffer.from(' hello')]);
    expect(bytes('Ã©', true)).toEqual([0xc3, 0xa9]); // "é"
    expect(bytes('Ã', true)).toEqual([0xc3]); // a lead byte alone
    expect(bytes('âĤ', true)).toEqual([0xe2, 0x82]); // the first two bytes of "€"
    expect(bytes('Ċ', true)).toEqual([0x0a]);
    expect(bytes('ÿ', true)).toEqual([0xff]);
  });

  it('knows no bytes for other texts', () => {
    expect(bytes('▁hello', false)).toBeNull();
    expect(bytes('<0xZZ>', false)).toBeNull();
    expect(bytes('€', true)).toBeNull(); // not a byte-level character
  });
});
