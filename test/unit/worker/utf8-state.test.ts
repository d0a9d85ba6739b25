import { isUtf8 } from 'node:buffer';
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import {
  UTF8_BOUNDARY,
  UTF8_INVALID,
  UTF8_STATES,
  utf8AdvanceBytes,
  Utf8TokenTable,
} from '../../../src/worker/utf8-state.ts';

// The oracle is Node's isUtf8: strict UTF-8 as a fatal TextDecoder reads it (no overlongs, surrogates, or past U+10FFFF).

const state = (...bytes: number[]) => utf8AdvanceBytes(UTF8_BOUNDARY, Uint8Array.from(bytes));

describe('UTF-8 state machine', () => {
  it('accepts complete characters of every length, at the edges of each range', () => {
    for (const bytes of [
      [0x00],
      [0x41],
      [0x7f],
      [0xc2, 0x80],
      [0xc3, 0xa9],
      [0xdf, 0xbf],
      [0xe0, 0xa0, 0x80],
      [0xe2, 0x82, 0xac],
      [0xed, 0x9f, 0xbf],
      [0xee, 0x80, 0x80],
      [0xef, 0xbf, 0xbf],
      [0xf0, 0x90, 0x80, 0x80],
      [0xf0, 0x9d, 0x84, 0x9e],
      [0xf3, 0xbf, 0xbf, 0xbf],
      [0xf4, 0x8f, 0xbf, 0xbf],
    ])
      expect(state(...bytes), bytes.map((b) => b.toString(16)).join(' ')).toBe(UTF8_BOUNDARY);
  });

  it('is inside a character (not invalid, not at a boundary) after each proper prefix', () => {
    for (const bytes of [
      [0xc3],
      [0xe2],
      [0xe2, 0x82],
      [0xe0, 0xa0],
      [0xed, 0x80],
      [0xf0, 0x9d],
      [0xf0, 0x9d, 0x84],
      [0xf4, 0x8f, 0xbf],
    ]) {
      const s = state(...bytes);
      expect(s, bytes.map((b) => b.toString(16)).join(' ')).toBeGreaterThan(UTF8_BOUNDARY);
      expect(s).toBeLessThan(UTF8_STATES);
    }
  });

  it('refuses stray continuations, overlongs, surrogates, code points above U+10FFFF and bytes never used', () => {
    for (const bytes of [
      [0x80],
      [0xbf],
      [0x41, 0x80], // stray continuation
      [0xc0, 0x80],
      [0xc1, 0xbf],
      [0xe0, 0x80, 0x80],
      [0xe0, 0x9f, 0xbf],
      [0xf0, 0x80, 0x80, 0x80],
      [0xf0, 0x8f, 0xbf, 0xbf], // overlong
      [0xed, 0xa0, 0x80],
      [0xed, 0xbf, 0xbf], // surrogates
      [0xf4, 0x90, 0x80, 0x80],
      [0xf5],
      [0xf7],
      [0xf8],
      [0xfe],
      [0xff], // above U+10FFFF, never used
      [0xc3, 0x41],
      [0xc3, 0xc3],
      [0xe2, 0x82, 0x41],
      [0xf0, 0x9d, 0x84, 0xf0],
      [0xc3, 0xa9, 0xa9], // cut short or too long
    ])
      expect(state(...bytes), bytes.map((b) => b.toString(16)).join(' ')).toBe(UTF8_INVALID);
  });

  it('ends at a boundary exactly for the byte strings a strict decoder accepts (every 1- and 2-byte string)', () => {
    for (let a = 0; a < 256; a++) {
      expect(state(a) === UTF8_BOUNDARY, `${a}`).toBe(isUtf8(Uint8Array.of(a)));
      for (let b = 0; b < 256; b++)
        expect(state(a, b) === UTF8_BOUNDARY, `${a} ${b}`).toBe(isUtf8(Uint8Array.of(a, b)));
    }
  });

  it('agrees with a strict decoder on random byte strings, and never calls a valid prefix invalid', () => {
    const interesting = fc.oneof(
      fc.integer({ min: 0, max: 255 }),
      fc.constantFrom(0x41, 0x80, 0x8f, 0x90, 0x9f, 0xa0, 0xbf, 0xc2, 0xdf, 0xe0, 0xed, 0xef, 0xf0, 0xf4, 0xf5),
    );
    fc.assert(
      fc.property(fc.array(interesting, { maxLength: 12 }), (list) => {
        const bytes = Uint8Array.from(list);
        const s = utf8AdvanceBytes(UTF8_BOUNDARY, bytes);
        expect(s === UTF8_BOUNDARY).toBe(isUtf8(bytes));
        // A string a strict decoder accepts once some completion is appended is never invalid.
        const completed = [
          [],
          [0xbf],
          [0x90, 0xbf],
          [0xa0, 0xbf],
          [0x90, 0xbf, 0xbf],
          [0x80],
          [0x80, 0x80],
          [0x80, 0x80, 0x80],
        ].some((tail) => isUtf8(Uint8Array.from([...list, ...tail])));
        if (completed) expect(s).not.toBe(UTF8_INVALID);
      }),
      { seed: 11, numRuns: 3000 },
    );
  });

  it('walks every 128th Unicode scalar value byte by byte to a boundary, inside a character until its last byte', () => {
    const encoder = new TextEncoder();
    for (let cp = 0; cp <= 0x10ffff; cp += cp < 0x800 ? 1 : 128) {
      if (cp >= 0xd800 && cp <= 0xdfff) continue;
      const bytes = encoder.encode(String.fromCodePoint(cp));
      for (let i = 1; i < bytes.length; i++)
        expect(utf8AdvanceBytes(UTF8_BOUNDARY, bytes.subarray(0, i)), `U+${cp.toString(16)}`).not.toBe(UTF8_INVALID);
      expect(utf8AdvanceBytes(UTF8_BOUNDARY, bytes), `U+${cp.toString(16)}`).toBe(UTF8_BOUNDARY);
    }
  });
});

describe('Utf8TokenTable', () => {
  // 0: "ab"  1: <0xF0>  2: <0x9D>  3: "\x84\x9E" (two bytes)  4: end of generation  5: unknown bytes  6: empty  7: <0xC0>
  const table = new Utf8TokenTable([
    Uint8Array.of(0x61, 0x62),
    Uint8Array.of(0xf0),
    Uint8Array.of(0x9d),
    Uint8Array.of(0x84, 0x9e),
    'end',
    null,
    new Uint8Array(0),
    Uint8Array.of(0xc0),
  ]);

  it('follows a character split over several tokens', () => {
    const s1 = table.after(1, UTF8_BOUNDARY);
    const s2 = table.after(2, s1);
    expect(s1).not.toBe(UTF8_INVALID);
    expect(s2).not.toBe(UTF8_INVALID);
    expect(table.after(3, s2)).toBe(UTF8_BOUNDARY);
    expect(table.after(0, s2)).toBe(UTF8_INVALID); // ASCII inside a character
    expect(table.after(3, UTF8_BOUNDARY)).toBe(UTF8_INVALID); // continuation bytes first
  });

  it('allows end of generation only at a boundary, never a token of unknown bytes, and keeps the state over an empty piece', () => {
    const inside = table.after(1, UTF8_BOUNDARY);
    expect(table.after(4, UTF8_BOUNDARY)).toBe(UTF8_BOUNDARY);
    expect(table.after(4, inside)).toBe(UTF8_INVALID);
    for (let s = 0; s < UTF8_STATES; s++) {
      expect(table.after(5, s)).toBe(UTF8_INVALID);
      expect(table.after(6, s)).toBe(s);
    }
    expect(table.after(99, UTF8_BOUNDARY)).toBe(UTF8_INVALID);
  });

  it('lists the tokens not allowed from a state', () => {
    expect(table.disallowedFrom(UTF8_BOUNDARY)).toEqual([2, 3, 5, 7]);
    expect(table.disallowedFrom(table.after(1, UTF8_BOUNDARY))).toEqual([0, 1, 3, 4, 5, 7]);
  });
});
