/**
 * The native loop samples a step's output rows on several threads when it computes on a GPU (native/src/row_pool.h;
 * `samplerThreads`, auto = several on a GPU only). Rows are independent, so the answers are those of one thread:
 * greedy, seeded sampling with penalties and top-p, a grammar and logprobs, for 12 concurrent jobs on 12 slots,
 * run on the CPU with 1 and 4 sampler threads (CI has no GPU; the thread count is what changes).
 */
import { afterAll, describe, expect, it } from 'vitest';
import { ensureTinyModel } from '../../models/test-model-path.ts';
import {
  loadNativeSlotEngineInternal,
  nativeAddonAvailable,
  type NativeSlotEngine,
} from '../../src/worker/native-slot-engine.ts';
import { submitJob, type TestJob, GREEDY_SAMPLING } from '../helpers/generation-job.ts';
import { realTestModel } from '../helpers/test-model.ts';

const addon = nativeAddonAvailable();
const BASE = GREEDY_SAMPLING;
const SLOTS = 12;

/** Job i: greedy, sampled (seeded), penalised, under a grammar, or with logprobs, on its own short prompt. */
function job(i: number): TestJob {
  const kinds: Array<Partial<TestJob>> = [
    { sampling: BASE },
    { sampling: { ...BASE, temperature: 0.9, topP: 0.9, seed: 100 + i } },
    { sampling: { ...BASE, temperature: 0.7, topK: 20, repeatPenalty: 1.3, presencePenalty: 0.5, seed: 200 + i } },
    { sampling: { ...BASE, temperature: 1, seed: 300 + i }, grammar: 'root ::= "a" [a-z ]{3,12} "."' },
    { sampling: BASE, topLogprobs: 2 },
  ];
  return {
    promptTokens: new Uint32Array([1, 10 + i, 20 + 2 * i, 30 + 3 * i]),
    maxTokens: 24,
    stops: [],
    ...kinds[i % kinds.length]!,
  };
}

async function runAll(engine: NativeSlotEngine): Promise<Array<{ text: string; logprobs: number[]; finish: string }>> {
  return Promise.all(
    Array.from(
      { length: SLOTS },
      (_, i) =>
        new Promise<{ text: string; logprobs: number[]; finish: string }>((resolve, reject) => {
          const out = { text: '', logprobs: [] as number[], finish: '' };
          submitJob(engine, job(i), {
            onText: (text, _n, lps) => {
              out.text += text;
              for (const lp of lps ?? []) out.logprobs.push(lp.logprob);
            },
            onDone: (r) => resolve({ ...out, finish: r.finishReason }),
            onError: (e) => reject(new Error(`${e.code}: ${e.message}`)),
          });
        }),
    ),
  );
}

describe.skipIf(!addon.ok)('parallel sampling of output rows', () => {
  const engines: NativeSlotEngine[] = [];
  afterAll(async () => {
    await Promise.all(engines.map((e) => e.dispose()));
  });

  it('gives every job the answer one sampler thread gives', async () => {
    const modelPath = realTestModel() ?? (await ensureTinyModel());
    const answers = [];
    for (const samplerThreads of [1, 4]) {
      const engine = await loadNativeSlotEngineInternal({
        modelPath,
        contextSize: 128,
        slots: SLOTS,
        threads: 2,
        samplerThreads,
        promptCacheMiB: 0,
      });
      engines.push(engine);
      answers.push(await runAll(engine));
      // A second round on the same engine: samplers and the pool are reused across jobs.
      answers.push(await runAll(engine));
    }
    const [one, oneAgain, four, fourAgain] = answers;
    expect(one!.every((a) => a.finish !== '')).toBe(true);
    expect(one!.filter((a, i) => i % 5 === 3).every((a) => /^a[a-z ]{3,12}\.$/.test(a.text))).toBe(true);
    expect(one!.filter((a, i) => i % 5 === 4).every((a) => a.logprobs.length > 0)).toBe(true);
    expect(four).toEqual(one);
    expect(fourAgain).toEqual(oneAgain);
  });
});
