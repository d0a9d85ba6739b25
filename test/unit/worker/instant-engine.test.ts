import { describe, expect, it } from 'vitest';
import type { TokenLogprob } from '../../../src/protocol/chat-delta.ts';
import { InstantEngine } from '../../../src/worker/instant-engine.ts';
import { DEFAULT_SAMPLING } from '../../../src/engine/sampling-defaults.ts';
import type { SlotJobResult } from '../../../src/worker/slot-engine.ts';
import { submitJob, type TestJob } from '../../helpers/generation-job.ts';

function run(
  job: Partial<TestJob>,
): Promise<{ text: string; calls: Array<TokenLogprob[] | undefined>; result: SlotJobResult }> {
  const engine = new InstantEngine(256, 2);
  const calls: Array<TokenLogprob[] | undefined> = [];
  let text = '';
  return new Promise((resolve, reject) => {
    submitJob(
      engine,
      { promptTokens: new Uint32Array(4), maxTokens: 5, stops: [], sampling: DEFAULT_SAMPLING, ...job },
      {
        onText: (t, _n, lp) => {
          text += t;
          calls.push(lp);
        },
        onDone: (result) => resolve({ text, calls, result }),
        onError: (e) => reject(new Error(e.message)),
      },
    );
  });
}

describe('instant engine', () => {
  it('accepts a grammar and ignores it', async () => {
    const plain = await run({});
    const constrained = await run({ grammar: 'root ::= "{}"' });
    expect(constrained.text).toBe(plain.text);
    expect(constrained.result).toEqual(plain.result);
  });

  it('gives logprobs only when asked, one entry per word with the asked number of alternatives', async () => {
    expect((await run({})).calls.every((c) => c === undefined)).toBe(true);
    const asked = await run({ topLogprobs: 2, stops: [' fox'] });
    expect(asked.text).toBe(' the quick brown');
    const entries = asked.calls.flatMap((c) => c ?? []);
    expect(entries.map((e) => e.token)).toEqual([' the', ' quick', ' brown']); // the stop string's word is never emitted
    expect(entries[0]).toEqual({
      token: ' the',
      logprob: 0,
      bytes: [...Buffer.from(' the')],
      top: [
        { token: ' the', logprob: 0, bytes: [...Buffer.from(' the')] },
        { token: ' quick', logprob: -10, bytes: [...Buffer.from(' quick')] },
      ],
    });
  });
});
