import { describe, expect, it } from 'vitest';
import { DeltaAssembler } from '../../../src/providers/delta-assembler.ts';
import { SecretScrubber } from '../../../src/providers/secret-scrubber.ts';
import type { VendorEvent } from '../../../src/providers/vendor-adapter.ts';

const KEY = 'sk-test-0123456789abcdefSECRET';
const run = (events: VendorEvent[], requireEnd = true) => {
  const a = new DeltaAssembler('mistral', new SecretScrubber([KEY]));
  const out = events.map((e) => a.accept(e)).filter((d) => d !== null);
  return [...out, ...a.close(requireEnd)];
};

describe('DeltaAssembler (vendor events -> ChatDeltas)', () => {
  it('maps vendor keys to 0-based indices in order of first appearance; id and name only on the first fragment', () => {
    const deltas = run([
      { type: 'tool_call', key: 3, id: 'toolu_a', name: 'f', arguments: '' },
      { type: 'tool_call', key: 5, id: 'toolu_b', name: 'g', arguments: '{"x":' },
      { type: 'tool_call', key: 3, arguments: '{"y":2}' },
      { type: 'tool_call', key: 5, arguments: '1}' },
      { type: 'finish', reason: 'tool_calls' },
      { type: 'end' },
    ]);
    expect(deltas).toEqual([
      { type: 'tool_call', index: 0, id: 'toolu_a', name: 'f', arguments: '' },
      { type: 'tool_call', index: 1, id: 'toolu_b', name: 'g', arguments: '{"x":' },
      { type: 'tool_call', index: 0, arguments: '{"y":2}' },
      { type: 'tool_call', index: 1, arguments: '1}' },
      { type: 'finish', reason: 'tool_calls', usage: undefined },
    ]);
  });

  it('generates ids for calls without one, gives empty calls {} arguments, and says tool_calls when the vendor said stop', () => {
    const deltas = run([
      { type: 'tool_call', name: 'now', arguments: '' },
      { type: 'tool_call', name: 'now', arguments: '' },
      { type: 'finish', reason: 'stop' },
    ]);
    const firsts = deltas.filter((d) => d.type === 'tool_call' && d.id !== undefined);
    expect(firsts.map((d) => d.type === 'tool_call' && d.index)).toEqual([0, 1]);
    expect(firsts.every((d) => d.type === 'tool_call' && /^call_[A-Za-z0-9_-]{24}$/.test(d.id!))).toBe(true);
    expect(deltas.slice(2)).toEqual([
      { type: 'tool_call', index: 0, arguments: '{}' },
      { type: 'tool_call', index: 1, arguments: '{}' },
      { type: 'finish', reason: 'tool_calls', usage: undefined },
    ]);
    expect(
      run([
        { type: 'tool_call', name: 'f', arguments: '{}' },
        { type: 'finish', reason: 'length' },
      ]).at(-1),
    ).toMatchObject({ reason: 'length' });
  });

  it('merges usage onto the one finish; a stream without end or finish is stream_interrupted; a JSON reply without finish stops', () => {
    expect(
      run([
        { type: 'usage', usage: { promptTokens: 3 } },
        { type: 'text', text: 'hi' },
        { type: 'usage', usage: { completionTokens: 2 } },
        { type: 'finish', reason: 'stop' },
      ]).at(-1),
    ).toEqual({
      type: 'finish',
      reason: 'stop',
      usage: { promptTokens: 3, completionTokens: 2, cachedTokens: undefined },
    });
    expect(() => run([{ type: 'text', text: 'cut' }])).toThrow(
      expect.objectContaining({ status: 502, code: 'stream_interrupted' }),
    );
    expect(run([{ type: 'text', text: 'whole' }], false).at(-1)).toMatchObject({ type: 'finish', reason: 'stop' });
  });

  it('an error event throws a 502 with the message scrubbed of the key', () => {
    expect(() => run([{ type: 'error', message: `Unauthorized key ${KEY}` }])).toThrow(
      expect.objectContaining({
        status: 502,
        code: 'stream_error',
        message: expect.not.stringContaining('0123456789abcdef'),
      }),
    );
    expect(() => run([{ type: 'error', status: 529, message: 'overloaded_error: Overloaded' }])).toThrow(
      expect.objectContaining({ status: 502, code: '529' }),
    );
  });
});
