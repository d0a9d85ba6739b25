/**
 * How the native loop computes, on the project's own tiny llama (always available): persistent compute
 * threads give the same greedy output as ggml's per-decode threads; the per-step token budget prefills a
 * prompt that arrives while another slot generates in chunks (one generated token per chunk) without
 * changing anyone's output; the load-time thread calibration reports what it measured and picks one of
 * the counts it tried. Behaviour only: no timing is asserted. Skipped, saying why, without the addon.
 */
import { beforeAll, describe, expect, it } from 'vitest';
import { loadHearthNative } from '../../native/binding.ts';
import { ensureTinyModel } from '../../models/test-model-path.ts';
import { DEFAULT_TINY_REPLY } from '../../models/tiny-llama.ts';
import {
  loadNativeSlotEngineInternal,
  nativeAddonAvailable,
  type NativeSlotEngine,
} from '../../src/worker/native-slot-engine.ts';
import { generationJob, GREEDY_SAMPLING } from '../helpers/generation-job.ts';
import { type JobRun, startJob } from '../helpers/job-run.ts';
import { useNativeEngines } from '../helpers/native-engines.ts';

const addon = nativeAddonAvailable();
const skipReason = addon.ok ? '' : `native addon unavailable: ${addon.reason}`;

/** The tiny vocabulary's byte token for "\n": after it the tiny model replies DEFAULT_TINY_REPLY (models/tiny-llama.ts). */
const NEWLINE = 3 + 0x0a;

/** Token ids that are ordinary pieces of the tiny vocabulary (no newline last: the model then never stops early). */
const promptOf = (length: number, offset: number) =>
  Uint32Array.from({ length }, (_, i) => 200 + ((i * 37 + offset) % 900));

/** A greedy job of `maxTokens` on `prompt`, run to its end. */
function run(engine: NativeSlotEngine, prompt: Uint32Array, maxTokens: number): Promise<JobRun> {
  const job = { promptTokens: prompt, maxTokens, stops: [], sampling: GREEDY_SAMPLING };
  return startJob(engine, job, { text: '', tokens: 0 }).done;
}

describe.skipIf(skipReason !== '')(
  `native compute threads and step budget${skipReason ? ` (skipped: ${skipReason})` : ''}`,
  () => {
    const load = useNativeEngines(() => ensureTinyModel(), { contextSize: 512, slots: 4, threads: 2 });

    it('decodes the same greedy tokens with persistent compute threads as with per-decode threads', async () => {
      const prompts = [promptOf(8, 0), promptOf(40, 3), promptOf(3, 9)];
      const outputs: string[][] = [];
      for (const threadPool of [false, true]) {
        const engine = await load({ persistentThreads: threadPool, threadPoll: 50 });
        expect(engine.loaded.threadPool).toBe(threadPool);
        expect(engine.loaded.threads).toBe(2);
        outputs.push(
          (await Promise.all(prompts.map((p) => run(engine, p, 40)))).map((r) => {
            expect(r.result?.finishReason).toBe('length');
            return r.text;
          }),
        );
        await engine.dispose();
      }
      expect(outputs[1]).toEqual(outputs[0]);
      expect(outputs[0]!.every((t) => t.length > 0)).toBe(true);
    });

    it('names the ggml CPU backend library it computes with', async () => {
      const engine = await load({ threads: 1 });
      expect(engine.loaded.cpuBackend).toMatch(/^libggml-cpu.*\.so$/);
    });
  },
);

describe.skipIf(skipReason !== '')(`native step token budget${skipReason ? ` (skipped: ${skipReason})` : ''}`, () => {
  let modelPath: string;
  beforeAll(async () => {
    modelPath = await ensureTinyModel();
  });

  /**
   * At the addon level (its prompt event says how many decode steps a prompt took): job G generates
   * 1,000 tokens; once its first text arrives, job L brings a 300-token prompt ending in "\n". Returns L's prompt steps,
   * whether G was still generating when L's prompt was done, and both outputs.
   */
  const scenario = (stepTokenBudget: number, stepTimeRatio = 0, submitAfterTokens = 1, promptRideTokens = 0) =>
    new Promise<{ promptSteps: number; genStillRunning: boolean; g: string; l: string; gTokens: number }>(
      (resolve, reject) => {
        const native = loadHearthNative();
        if (!native.ok) throw new Error(native.reason);
        const text = new Map<number, string>([
          [1, ''],
          [2, ''],
        ]);
        let gTokens = 0;
        let promptSteps = -1;
        let genStillRunning = false;
        let gDone = false;
        let lSubmitted = false;
        const finished = new Set<number>();
        const loop = new native.binding.SlotLoop(
          {
            modelPath,
            contextSize: 2048,
            slots: 2,
            threads: 1,
            stepTokenBudget,
            prefillStepPercent: stepTimeRatio * 100,
            promptRideTokens,
          },
          (events) => {
            for (const e of events) {
              if (e.type === 'ready') {
                const refused = loop.submit(
                  1,
                  promptOf(12, 1),
                  generationJob({ maxTokens: 1000, sampling: GREEDY_SAMPLING }),
                );
                if (refused) reject(new Error(refused.message));
              } else if (e.type === 'text') {
                text.set(e.job, text.get(e.job)! + e.text);
                if (e.job === 1) gTokens += e.tokens;
                if (e.job === 1 && !lSubmitted && gTokens >= submitAfterTokens) {
                  lSubmitted = true;
                  const refused = loop.submit(
                    2,
                    Uint32Array.from([...promptOf(299, 5), NEWLINE]),
                    generationJob({ maxTokens: 40, sampling: GREEDY_SAMPLING }),
                  );
                  if (refused) reject(new Error(refused.message));
                }
              } else if (e.type === 'prompt' && e.job === 2) {
                promptSteps = e.promptSteps;
                genStillRunning = !gDone;
              } else if (e.type === 'done' || e.type === 'error') {
                if (e.job === 1) gDone = true;
                finished.add(e.job);
                if (finished.size === 2) loop.dispose();
              } else if (e.type === 'disposed') {
                resolve({ promptSteps, genStillRunning, g: text.get(1)!, l: text.get(2)!, gTokens });
              } else if (e.type === 'loadFailed') {
                reject(new Error(e.message));
              }
            }
          },
        );
      },
    );

  it('prefills a long prompt in budget-sized chunks while another slot generates, its reply unchanged', async () => {
    const whole = await scenario(0);
    const chunked = await scenario(16);
    for (const s of [whole, chunked]) {
      expect(s.genStillRunning).toBe(true);
      expect(s.gTokens).toBe(1000);
    }
    // No budget: the whole prompt in one step. Budget 16 with one generating row: 15 prompt tokens per
    // step, ceil(300 / 15) = 20 steps.
    expect(whole.promptSteps).toBe(1);
    expect(chunked.promptSteps).toBe(20);
    // The generating job's text may differ: its row shares a batch of another shape, and llama.cpp's
    // results depend on batch shape. The prompt job's scripted reply does not.
    expect(whole.l).toBe(DEFAULT_TINY_REPLY);
    expect(chunked.l).toBe(DEFAULT_TINY_REPLY);
  });

  it('paces a long prompt by measured step time while another slot generates, its reply unchanged', async () => {
    // Submitted once the generating job has several decode-only steps behind it (the pacer's yardstick):
    // the first paced step takes at most 8 prompt tokens, later ones what the step times allow, so the
    // 300-token prompt needs several steps although no token budget is set.
    const paced = await scenario(0, 1.5, 5);
    expect(paced.genStillRunning).toBe(true);
    expect(paced.gTokens).toBe(1000);
    expect(paced.promptSteps).toBeGreaterThan(1);
    expect(paced.promptSteps).toBeLessThanOrEqual(300);
    expect(paced.l).toBe(DEFAULT_TINY_REPLY);
  });

  it("feeds a prompt of at most --prompt-ride-tokens one token a step in the generating rows' pass, its reply unchanged", async () => {
    // L's 300 prompt tokens (none cached) ride with G's row: one pass a step, 300 steps. With 299 allowed, the
    // prompt takes a pass of its own, in one step, as without the setting.
    const rides = await scenario(0, 0, 1, 300);
    const own = await scenario(0, 0, 1, 299);
    for (const s of [rides, own]) {
      expect(s.genStillRunning).toBe(true);
      expect(s.gTokens).toBe(1000);
      expect(s.l).toBe(DEFAULT_TINY_REPLY);
    }
    expect(rides.promptSteps).toBe(300);
    expect(own.promptSteps).toBe(1);
  });

  it.each([{ stepTokenBudget: 16 }, { promptRideTokens: 300 }])(
    'uses the whole batch for a prompt when no slot is generating (%o)',
    async (tuning) => {
      const native = loadHearthNative();
      if (!native.ok) throw new Error(native.reason);
      const steps = await new Promise<number>((resolve, reject) => {
        let seen = -1;
        const loop = new native.binding.SlotLoop(
          { modelPath, contextSize: 512, slots: 2, threads: 1, ...tuning },
          (events) => {
            for (const e of events) {
              if (e.type === 'ready')
                loop.submit(1, promptOf(300, 5), generationJob({ maxTokens: 2, sampling: GREEDY_SAMPLING }));
              else if (e.type === 'prompt') seen = e.promptSteps;
              else if (e.type === 'done') loop.dispose();
              else if (e.type === 'disposed') resolve(seen);
              else if (e.type === 'loadFailed' || e.type === 'error') reject(new Error(e.message));
            }
          },
        );
      });
      expect(steps).toBe(1);
    },
  );
});

describe.skipIf(skipReason !== '')(`native thread calibration${skipReason ? ` (skipped: ${skipReason})` : ''}`, () => {
  it('times each thread count over a history, weighs the JavaScript allowance, and leaves the context as it found it', async () => {
    const slots = 4;
    const engine = await loadNativeSlotEngineInternal({
      modelPath: await ensureTinyModel(),
      contextSize: 256,
      slots,
      threads: 2,
      calibrateCores: 2,
      calibrateJsStepMs: 0.5,
      calibrateJsTokenMs: 0.25,
    });
    let calibratedText = '';
    let chosen = 0;
    try {
      const step = engine.loaded.calibrationStep!;
      // One row per slot, over half the slot's context (at most 128), with the allowance 0.5 + 0.25 per row.
      expect(step).toEqual({ rows: slots, history: 128, jsMs: 0.5 + 0.25 * slots });
      expect(engine.loaded.calibration?.map((t) => t.threads)).toEqual([1, 2]);
      for (const t of engine.loaded.calibration!) {
        expect(t.msPerStep).toBeGreaterThan(0);
        // 2 threads on 2 cores leave none free: the JavaScript work adds up; 1 thread runs beside it.
        const expected = t.threads >= 2 ? t.msPerStep + step.jsMs : Math.max(t.msPerStep, step.jsMs);
        expect(t.estimateMs).toBeCloseTo(expected, 9);
      }
      const best = [...engine.loaded.calibration!].sort((a, b) => a.estimateMs - b.estimateMs)[0]!;
      // The chosen count is the best estimate, or fewer threads within 3% of it.
      chosen = engine.loaded.threads;
      const pick = engine.loaded.calibration!.find((t) => t.threads === chosen)!;
      expect(pick.estimateMs).toBeLessThanOrEqual(best.estimateMs / 0.97);
      const r = await run(engine, Uint32Array.of(...promptOf(10, 2), NEWLINE), 40);
      expect(r.result?.finishReason).not.toBe('error');
      calibratedText = r.text;
    } finally {
      await engine.dispose();
    }
    // The calibration's history and steps leave nothing behind: the reply equals one from a context that never calibrated.
    const plain = await loadNativeSlotEngineInternal({
      modelPath: await ensureTinyModel(),
      contextSize: 256,
      slots,
      threads: chosen,
    });
    try {
      expect(plain.loaded.calibration).toBeUndefined();
      const r = await run(plain, Uint32Array.of(...promptOf(10, 2), NEWLINE), 40);
      expect(calibratedText).toBe(r.text);
      expect(r.text).toContain(DEFAULT_TINY_REPLY.slice(0, 8));
    } finally {
      await plain.dispose();
    }
  });

  it('times a shorter history when the slot context is small', async () => {
    const engine = await loadNativeSlotEngineInternal({
      modelPath: await ensureTinyModel(),
      contextSize: 40,
      slots: 2,
      threads: 2,
      calibrateCores: 2,
    });
    try {
      // Half of the 40-position slot context; the default allowance 0.025 ms a step + 0.025 ms a token.
      expect(engine.loaded.calibrationStep).toEqual({ rows: 2, history: 20, jsMs: 0.025 + 0.025 * 2 });
      expect(engine.loaded.calibration?.length).toBe(2);
    } finally {
      await engine.dispose();
    }
  });
});
