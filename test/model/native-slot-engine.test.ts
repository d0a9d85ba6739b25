/**
 * The native continuous-batching engine (native/ addon + src/worker/native-slot-engine.ts) on real GGUFs:
 * greedy output equal to node-llama-cpp's own evaluation, batching, limits, stop strings, cancel, prefix
 * cache, context overflow, dispose, and loading in worker threads next to node-llama-cpp.
 * Needs /work/shared/models (skipped, saying so, without it) and a built addon (`node --import tsx
 * native/build.ts`; skipped, saying why, when it is not built).
 */
import { existsSync } from 'node:fs';
import { resolve } from 'node:path';
import { getLlama, LlamaLogLevel, type Llama, type LlamaModel, type Token } from 'node-llama-cpp';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { ensureTinyModel } from '../../models/test-model-path.ts';
import { DEFAULT_TINY_REPLY } from '../../models/tiny-llama.ts';
import { ApiError } from '../../src/errors/index.ts';
import {
  loadNativeSlotEngineInternal,
  nativeAddonAvailable,
  NativeEngineError,
  type NativeSlotEngine,
} from '../../src/worker/native-slot-engine.ts';
import type { SamplingParams } from '../../src/engine/sampling-defaults.ts';
import type { SlotJobResult } from '../../src/worker/slot-engine.ts';
import { generationJob, submitJob, type TestJob, GREEDY_SAMPLING } from '../helpers/generation-job.ts';
import { tsWorker } from '../helpers/ts-worker.ts';
import { thrownBy } from '../helpers/thrown.ts';

const MODELS_DIR = resolve(import.meta.dirname, '../../../shared/models');
const STORIES = resolve(MODELS_DIR, 'stories260K.gguf');
const RANDOM_LLAMA2 = resolve(MODELS_DIR, 'llama-2-tiny-random.gguf');
const haveModels = existsSync(STORIES) && existsSync(RANDOM_LLAMA2);
const addon = nativeAddonAvailable();
const addonSkip = addon.ok ? '' : `native addon unavailable: ${addon.reason}`;
const skipReason = addonSkip || (haveModels ? '' : `models missing in ${MODELS_DIR}`);

const GREEDY = GREEDY_SAMPLING;
/**
 * A budget for jobs cancelled from their own events: the cancel reaches the loop some tokens after the event that
 * asked for it (99th percentile 36-75 of stories260K's tokens on a loaded 2-core machine), and a job that ran its
 * whole budget meanwhile ends 'length' on the loop. Greedy stories260K runs all 2,000 from "Once upon a time".
 */
const RUNWAY = 2000;
const RUNWAY_CONTEXT = 2048;

interface Run {
  text: string;
  chunks: string[];
  /** Sum of the tokenCount arguments of onText. */
  textTokens: number;
  prompt?: { promptTokens: number; cachedTokens: number };
  result?: SlotJobResult;
  error?: { message: string; code: string };
  /** Callback names in arrival order. */
  order: string[];
}

/** The error submitting a 4-token greedy job on `promptTokens` throws at once, expected to be a `type`. */
function submitRefused<E extends Error>(
  engine: NativeSlotEngine,
  promptTokens: Uint32Array,
  type: abstract new (...args: never[]) => E,
): E {
  const job = { promptTokens, maxTokens: 4, stops: [], sampling: GREEDY };
  return thrownBy(() => submitJob(engine, job, { onText() {}, onDone() {}, onError() {} }), type);
}

/** Submits a job and resolves at its terminal callback; `onChunk` may act (e.g. cancel) mid-stream. */
function submit(
  engine: NativeSlotEngine,
  job: TestJob,
  onChunk?: (run: Run, cancel: () => void) => void,
): Promise<Run> {
  return new Promise((done) => {
    const run: Run = { text: '', chunks: [], textTokens: 0, order: [] };
    const handle = submitJob(
      engine,
      { maxTokens: 32, stops: [], sampling: GREEDY, ...job },
      {
        onPrompt: (info) => {
          run.order.push('prompt');
          run.prompt = info;
        },
        onText: (text, tokens) => {
          run.order.push('text');
          run.text += text;
          run.chunks.push(text);
          run.textTokens += tokens;
          onChunk?.(run, () => handle.cancel());
        },
        onDone: (result) => {
          run.order.push('done');
          run.result = result;
          done(run);
        },
        onError: (error) => {
          run.order.push('error');
          run.error = error;
          done(run);
        },
      },
    );
  });
}

describe.skipIf(skipReason !== '')(`native slot engine${skipReason ? ` (skipped: ${skipReason})` : ''}`, () => {
  let llama: Llama;
  let stories: LlamaModel;
  let randomLlama2: LlamaModel;
  const engines: NativeSlotEngine[] = [];

  const load = async (modelPath: string, slots: number, contextSize = 256) => {
    const engine = await loadNativeSlotEngineInternal({ modelPath, contextSize, slots, threads: 1 });
    engines.push(engine);
    return engine;
  };
  const tokens = (model: LlamaModel, text: string) => Uint32Array.from([model.tokens.bos!, ...model.tokenize(text)]);

  beforeAll(async () => {
    llama = await getLlama({ gpu: false, build: 'never', logLevel: LlamaLogLevel.error });
    stories = await llama.loadModel({ modelPath: STORIES, vocabOnly: false });
    randomLlama2 = await llama.loadModel({ modelPath: RANDOM_LLAMA2 });
  });

  afterAll(async () => {
    for (const e of engines) await e.dispose();
    await stories?.dispose();
    await randomLlama2?.dispose();
    await llama?.dispose();
  });

  it('produces greedy output deterministically, equal to node-llama-cpp evaluating the same model', async () => {
    const engine = await load(STORIES, 2);
    const prompt = tokens(stories, 'Once upon a time');
    const first = await submit(engine, { promptTokens: prompt, maxTokens: 48 });
    const second = await submit(engine, { promptTokens: prompt, maxTokens: 48 });
    const reference = await referenceGreedy(stories, prompt, 48);

    expect(first.order[0]).toBe('prompt');
    expect(first.order.at(-1)).toBe('done');
    expect(first.text.length).toBeGreaterThan(20);
    expect(second.text).toBe(first.text);
    expect(first.text).toBe(reference.text);
    expect(first.result?.completionTokens).toBe(reference.tokens);
  });

  it('never splits a UTF-8 character across text pieces (random weights, 32k Llama 2 vocabulary)', async () => {
    const engine = await load(RANDOM_LLAMA2, 1, 512);
    const prompt = tokens(randomLlama2, 'Hello world, ünïcödé → 😀');
    const run = await submit(engine, { promptTokens: prompt, maxTokens: 300 });
    const reference = await referenceGreedy(randomLlama2, prompt, 300);

    // Emitting half a character would add U+FFFD replacement characters the one-piece decoding lacks.
    expect(run.chunks.length).toBeGreaterThan(10);
    expect(/[^\x00-\x7f]/.test(run.text)).toBe(true);
    expect(run.text).toBe(reference.text);
  });

  it('runs several jobs in one batch, each with the output it has alone', async () => {
    const engine = await load(STORIES, 4);
    const prompts = ['Once upon a time', 'The little dog', 'Tom and Sue went to the park', 'One day, a bird'].map((t) =>
      tokens(stories, t),
    );
    const alone: Run[] = [];
    for (const p of prompts) alone.push(await submit(engine, { promptTokens: p, maxTokens: 40 }));
    // Submitted in one tick: the loop picks them up together and decodes them in shared steps.
    const together = await Promise.all(prompts.map((p, i) => submit(engine, { promptTokens: p, maxTokens: 40 - i })));

    together.forEach((run, i) => {
      expect(run.result?.finishReason).toBe('length');
      expect(run.result?.completionTokens).toBe(40 - i);
      expect(alone[i]!.text.startsWith(run.text)).toBe(true);
      expect(run.text.length).toBeGreaterThan(10);
    });
    expect(new Set(together.map((r) => r.text)).size).toBe(4);
    expect(engine.activeJobs).toBe(0);
  });

  it("closes a gap between busy slots by moving a job's KV, without changing its output", async () => {
    const prompts = ['Once upon a time', 'The little dog', 'Tom and Sue went to the park'].map((t) =>
      tokens(stories, t),
    );
    const solo = await load(STORIES, 1);
    const alone: Run[] = [];
    for (const p of prompts) alone.push(await submit(solo, { promptTokens: p, maxTokens: 60 }));

    // Fresh engine: jobs land on slots 0, 1, 2; the middle one ends first, leaving busy slots 0 and 2.
    const engine = await load(STORIES, 3);
    const runs = await Promise.all(
      prompts.map((p, i) => submit(engine, { promptTokens: p, maxTokens: i === 1 ? 5 : 60 })),
    );
    expect(engine.stats().migrations).toBeGreaterThanOrEqual(1);
    expect(runs[0]!.text).toBe(alone[0]!.text);
    expect(alone[1]!.text.startsWith(runs[1]!.text)).toBe(true);
    expect(runs[2]!.text).toBe(alone[2]!.text);
    const stats = engine.stats();
    expect(stats.generatedTokens).toBe(60 + 5 + 60);
    expect(stats.promptTokens).toBe(prompts.reduce((n, p) => n + p.length, 0));
  });

  it("ends at max tokens with 'length' and exactly that many completion tokens", async () => {
    const engine = await load(STORIES, 1);
    const run = await submit(engine, { promptTokens: tokens(stories, 'Once upon a time'), maxTokens: 7 });
    expect(run.result).toMatchObject({ finishReason: 'length', completionTokens: 7, promptTokens: 5 });
    expect(run.textTokens).toBeLessThanOrEqual(7);
    expect(run.textTokens).toBeGreaterThanOrEqual(6);
  });

  it("stops at the first stop string with 'stop' and never emits it", async () => {
    const engine = await load(STORIES, 1);
    const prompt = tokens(stories, 'Once upon a time');
    const full = (await submit(engine, { promptTokens: prompt, maxTokens: 48 })).text;
    expect(full).toContain(' Lily');
    expect(full).toContain('park');

    const single = await submit(engine, { promptTokens: prompt, maxTokens: 48, stops: [' named Lily'] });
    expect(single.result?.finishReason).toBe('stop');
    expect(single.text).toBe(full.slice(0, full.indexOf(' named Lily')));
    expect(single.chunks.join('')).not.toContain(' named');

    const earliest = await submit(engine, { promptTokens: prompt, maxTokens: 48, stops: ['park', 'Lily'] });
    expect(earliest.text).toBe(full.slice(0, full.indexOf('Lily')));

    // A prefix of a stop string is withheld while it could still match, then released.
    const nearMiss = await submit(engine, { promptTokens: prompt, maxTokens: 48, stops: [' Lilyx'] });
    expect(nearMiss.result?.finishReason).toBe('length');
    expect(nearMiss.text).toBe(full);
  });

  it('cancels mid-generation: the job ends cancelled, its KV is freed, and slots never leak', async () => {
    const engine = await load(STORIES, 2, RUNWAY_CONTEXT);
    const prompt = tokens(stories, 'Once upon a time');
    const cached = await submit(engine, { promptTokens: prompt, maxTokens: 8 });
    expect(cached.result?.finishReason).toBe('length');

    const [a, b] = await Promise.all(
      [0, 1].map(() =>
        submit(engine, { promptTokens: prompt, maxTokens: RUNWAY }, (run, cancel) => {
          if (run.chunks.length === 3) {
            cancel();
            cancel(); // idempotent
          }
        }),
      ),
    );
    for (const run of [a!, b!]) {
      expect(run.result?.finishReason).toBe('cancelled');
      expect(run.result!.completionTokens).toBeLessThan(RUNWAY);
      expect(run.chunks.length).toBe(3); // no text after cancel()
      expect(run.order.at(-1)).toBe('done');
    }

    // Cancelled in the same tick as submitted: no prompt callback, no tokens.
    const handle = await new Promise<SlotJobResult>((done) => {
      const h = submitJob(
        engine,
        { promptTokens: prompt, maxTokens: 50, stops: [], sampling: GREEDY },
        {
          onPrompt: () => {
            throw new Error('prompt callback after cancel');
          },
          onText: () => {
            throw new Error('text callback after cancel');
          },
          onDone: done,
          onError: (e) => {
            throw new Error(e.message);
          },
        },
      );
      h.cancel();
    });
    expect(handle.finishReason).toBe('cancelled');

    // More jobs than slots, one after another: every slot came back.
    for (let i = 0; i < 5; i++) {
      const run = await submit(engine, { promptTokens: tokens(stories, `The cat number ${i}`), maxTokens: 6 });
      expect(run.result).toMatchObject({ finishReason: 'length', completionTokens: 6 });
    }
    expect(engine.activeJobs).toBe(0);
  });

  it("frees a cancelled slot's KV cells at once (no prefix left to reuse)", async () => {
    const engine = await load(STORIES, 1, RUNWAY_CONTEXT);
    const prompt = tokens(stories, 'Once upon a time');
    await submit(engine, { promptTokens: prompt, maxTokens: 8 });
    let reused: Run;
    // An attempt whose job ran its whole runway before the cancel reached the loop kept its KV; it is tried again.
    for (let attempt = 1; ; attempt++) {
      reused = await submit(engine, { promptTokens: prompt, maxTokens: RUNWAY }, (run, cancel) => {
        if (run.chunks.length === 2) cancel();
      });
      if (reused.result?.completionTokens !== RUNWAY || attempt === 3) break;
    }
    expect(reused.prompt?.cachedTokens).toBe(prompt.length - 1);
    expect(reused.result?.finishReason).toBe('cancelled');
    expect(reused.result!.completionTokens).toBeLessThan(RUNWAY);
    const after = await submit(engine, { promptTokens: prompt, maxTokens: 4 });
    expect(after.prompt?.cachedTokens).toBe(0);
    expect(after.result?.cachedTokens).toBe(0);
  });

  it('reuses the longest cached prefix, reports cachedTokens, and keeps greedy output unchanged', async () => {
    const engine = await load(STORIES, 2);
    const prompt = tokens(stories, 'Once upon a time, there was a little girl named Lily. She');
    const cold = await submit(engine, { promptTokens: prompt, maxTokens: 24 });
    const warm = await submit(engine, { promptTokens: prompt, maxTokens: 24 });
    expect(cold.result?.cachedTokens).toBe(0);
    expect(warm.result?.cachedTokens).toBe(prompt.length - 1);
    expect(warm.prompt).toEqual({ promptTokens: prompt.length, cachedTokens: prompt.length - 1 });
    expect(warm.text).toBe(cold.text);

    // A follow-up that extends the conversation reuses at least the whole earlier prompt.
    const longer = Uint32Array.from([...prompt, ...stories.tokenize(cold.text), ...stories.tokenize(' Then')]);
    const next = await submit(engine, { promptTokens: longer, maxTokens: 8 });
    expect(next.result!.cachedTokens).toBeGreaterThanOrEqual(prompt.length);
    expect(next.result!.cachedTokens).toBeLessThan(longer.length);
  });

  it("rejects a prompt that does not fit and ends a slot that fills its context with 'length'", async () => {
    const engine = await load(STORIES, 2, 64);
    expect(engine.contextSize).toBe(64);
    const tooLong = new Uint32Array(64).fill(300);
    tooLong[0] = 1;
    expect(submitRefused(engine, tooLong, ApiError).code).toBe('context_length_exceeded');

    const nearlyFull = tooLong.subarray(0, 60);
    const run = await submit(engine, { promptTokens: nearlyFull, maxTokens: 1000 });
    expect(run.result).toMatchObject({ finishReason: 'length', completionTokens: 64 - 60 + 1 });
    const fromScratch = await submit(engine, { promptTokens: tokens(stories, 'Once upon a time'), maxTokens: 1000 });
    expect(fromScratch.result?.finishReason).toMatch(/^(length|stop)$/);
    expect(fromScratch.result!.promptTokens + fromScratch.result!.completionTokens).toBeLessThanOrEqual(65);
  });

  it('samples reproducibly for a given seed with temperature, top-k, top-p, min-p and penalties', async () => {
    const engine = await load(STORIES, 2);
    const prompt = tokens(stories, 'Once upon a time');
    const sampling: SamplingParams = {
      temperature: 0.9,
      topP: 0.95,
      topK: 40,
      minP: 0.05,
      repeatPenalty: 1.1,
      presencePenalty: 0.2,
      frequencyPenalty: 0.2,
      penaltyLastN: 64,
      seed: 1234,
    };
    const [a, b] = await Promise.all(
      [0, 1].map(() => submit(engine, { promptTokens: prompt, maxTokens: 40, sampling })),
    );
    expect(a!.result?.finishReason).toMatch(/^(length|stop)$/);
    expect(a!.text.length).toBeGreaterThan(0);
    expect(b!.text).toBe(a!.text);
  });

  it('takes the job as the engine resolved it: a field missing or out of range throws, none is clamped', async () => {
    const engine = await loadNativeSlotEngineInternal({ modelPath: STORIES, contextSize: 256, slots: 1, threads: 1 });
    const prompt = tokens(stories, 'Once upon a time');
    const none = { onText() {}, onDone() {}, onError() {} };
    expect(() => submitJob(engine, { promptTokens: prompt, maxTokens: 0 }, none)).toThrow(
      /^job\.maxTokens must be an integer in \[1, /,
    );
    expect(() => submitJob(engine, { promptTokens: prompt, topLogprobs: 21 }, none)).toThrow(
      /^job\.topLogprobs must be an integer in \[-1, 20\]/,
    );
    expect(() => engine.submit(prompt, { ...generationJob(), grammar: undefined as unknown as string }, none)).toThrow(
      /^job\.grammar must be a string/,
    );
    expect(engine.activeJobs).toBe(0);
    const run = await submit(engine, { promptTokens: prompt, maxTokens: 1 });
    expect(run.result).toMatchObject({ finishReason: 'length', completionTokens: 1 });
    await engine.dispose();
  });

  it('refuses more jobs than twice its slots (the loop holds the rest waiting), and disposes idempotently, cancelling what still runs', async () => {
    const engine = await loadNativeSlotEngineInternal({ modelPath: STORIES, contextSize: 256, slots: 1, threads: 1 });
    const prompt = tokens(stories, 'Once upon a time');
    const running = submit(engine, { promptTokens: prompt, maxTokens: 250 });
    const waiting = submit(engine, { promptTokens: prompt, maxTokens: 250 });
    expect(() =>
      submitJob(
        engine,
        { promptTokens: prompt, maxTokens: 4, stops: [], sampling: GREEDY },
        { onText() {}, onDone() {}, onError() {} },
      ),
    ).toThrow(expect.objectContaining({ code: 'slots_busy' }));

    const first = engine.dispose();
    const second = engine.dispose();
    expect(second).toBe(first);
    await first;
    const run = await running;
    expect(run.result?.finishReason).toBe('cancelled');
    expect((await waiting).result).toMatchObject({ finishReason: 'cancelled', completionTokens: 0 });
    await engine.dispose();
    expect(submitRefused(engine, prompt, NativeEngineError).code).toBe('engine_disposed');
  });

  it('fails to load a missing model with a clear error', async () => {
    await expect(
      loadNativeSlotEngineInternal({
        modelPath: resolve(MODELS_DIR, 'no-such-model.gguf'),
        contextSize: 64,
        slots: 1,
        threads: 1,
      }),
    ).rejects.toThrow(/could not load the model file/);
  });

  it('loads in two worker threads at once, next to node-llama-cpp, with the same output as here', async () => {
    const engine = await load(STORIES, 1);
    const expected = (await submit(engine, { promptTokens: tokens(stories, 'Once upon a time'), maxTokens: 24 })).text;
    const results = await Promise.all([0, 1].map(() => runInWorker(STORIES, 'Once upon a time', 24)));
    for (const r of results) {
      expect(r.error).toBeUndefined();
      expect(r.text).toBe(expected);
      expect(r.libllama).toHaveLength(1);
    }
  });

  it('survives worker threads terminated in the middle of generation, without dispose', async () => {
    for (let i = 0; i < 3; i++) {
      const { exitCode, messages } = await terminateWhileGenerating(STORIES);
      expect(messages).toEqual(['generating']);
      expect(exitCode).toBe(1); // terminate()'s exit code: the process (this test) lives on
    }
  });
});

/** node-llama-cpp's own greedy evaluation: up to `count` tokens or an end-of-generation token (not counted). */
async function referenceGreedy(
  model: LlamaModel,
  prompt: Uint32Array,
  count: number,
): Promise<{ text: string; tokens: number }> {
  const context = await model.createContext({ contextSize: 512, sequences: 1, threads: 1 });
  try {
    const out: Token[] = [];
    for await (const t of context.getSequence().evaluate(Array.from(prompt) as Token[], { temperature: 0 })) {
      out.push(t);
      if (out.length >= count || model.isEogToken(t)) break;
    }
    const completion = out.filter((t) => !model.isEogToken(t));
    return { text: model.detokenize(completion), tokens: completion.length };
  } finally {
    await context.dispose();
  }
}

// The project's generated tiny llama (models/, no download): after a prompt ending in "\n" it replies
// DEFAULT_TINY_REPLY and then an end-of-generation token.
describe.skipIf(addonSkip !== '')(
  `native slot engine on the generated tiny llama${addonSkip ? ` (skipped: ${addonSkip})` : ''}`,
  () => {
    let llama: Llama;
    let model: LlamaModel;
    let engine: NativeSlotEngine;

    beforeAll(async () => {
      const modelPath = await ensureTinyModel();
      llama = await getLlama({ gpu: false, build: 'never', logLevel: LlamaLogLevel.error });
      model = await llama.loadModel({ modelPath });
      engine = await loadNativeSlotEngineInternal({ modelPath, contextSize: 128, slots: 2, threads: 1 });
    });
    afterAll(async () => {
      await engine?.dispose();
      await model?.dispose();
      await llama?.dispose();
    });

    it("ends at the end-of-generation token with 'stop', not counting it, as node-llama-cpp does", async () => {
      const prompt = Uint32Array.from([model.tokens.bos!, ...model.tokenize('Say hello\n')]);
      const run = await submit(engine, { promptTokens: prompt, maxTokens: 50 });
      const reference = await referenceGreedy(model, prompt, 50);
      expect(run.result?.finishReason).toBe('stop');
      expect(run.text).toBe(DEFAULT_TINY_REPLY);
      expect(run.text).toBe(reference.text);
      expect(run.result?.completionTokens).toBe(reference.tokens);
      expect(run.textTokens).toBe(reference.tokens);

      const stopped = await submit(engine, { promptTokens: prompt, maxTokens: 50, stops: ['tiny'] });
      expect(stopped.result?.finishReason).toBe('stop');
      expect(stopped.text).toBe(DEFAULT_TINY_REPLY.slice(0, DEFAULT_TINY_REPLY.indexOf('tiny')));
    });
  },
);

/**
 * A worker thread that does what a model worker does: node-llama-cpp (vocabulary only) tokenizes,
 * the native engine generates.
 */
function runInWorker(
  modelPath: string,
  text: string,
  maxTokens: number,
): Promise<{ text?: string; libllama?: string[]; error?: string }> {
  const body = `
    try {
      const { getLlama, LlamaLogLevel } = nodeLlamaCpp;
      const { loadNativeSlotEngine } = engineModule;
      const llama = await getLlama({ gpu: false, build: 'never', logLevel: LlamaLogLevel.error });
      const vocab = await llama.loadModel({ modelPath: workerData.modelPath, vocabOnly: true });
      const promptTokens = Uint32Array.from([vocab.tokens.bos, ...vocab.tokenize(workerData.text)]);
      const engine = await loadNativeSlotEngine({ modelPath: workerData.modelPath, contextSize: 128, slots: 2, threads: 1 });
      const text = await new Promise((resolve, reject) => {
        let out = '';
        engine.submit(promptTokens, { maxTokens: workerData.maxTokens, stops: [], sampling: workerData.sampling, grammar: '', topLogprobs: -1, cachePartition: '' }, {
          onText: (t) => { out += t; }, onDone: () => resolve(out), onError: (e) => reject(new Error(e.message)),
        });
      });
      // One copy of llama.cpp in the process: node-llama-cpp and the addon mapped the same file.
      const { readFileSync } = await import('node:fs');
      const libllama = [...new Set(readFileSync('/proc/self/maps', 'utf8').split('\\n')
        .map((line) => line.split(/\\s+/)[5] ?? '').filter((path) => /\\/libllama(\\.v[0-9.]+)?\\.so$/.test(path)))];
      await engine.dispose();
      await vocab.dispose();
      await llama.dispose();
      parentPort.postMessage({ text, libllama });
    } catch (err) {
      parentPort.postMessage({ error: String(err && err.stack || err) });
    }
  `;
  return new Promise((resolvePromise, reject) => {
    const worker = tsWorker(
      body,
      { modelPath, text, maxTokens, sampling: GREEDY },
      { nodeLlamaCpp: 'node-llama-cpp', engineModule: 'src/worker/native-slot-engine.ts' },
    );
    worker.once('message', (m: { text?: string; libllama?: string[]; error?: string }) => resolvePromise(m));
    worker.once('error', reject);
    worker.once('exit', (code) => {
      if (code !== 0) reject(new Error(`worker exited with ${code}`));
    });
  });
}

/** A worker generating on two slots is terminated as soon as text flows (the env cleanup hook's path). */
function terminateWhileGenerating(modelPath: string): Promise<{ exitCode: number; messages: unknown[] }> {
  const body = `
    const { loadNativeSlotEngine } = engineModule;
    const engine = await loadNativeSlotEngine({ modelPath: workerData.modelPath, contextSize: 2048, slots: 2, threads: 1 });
    let pieces = 0;
    for (const seed of [1, 2]) {
      engine.submit(new Uint32Array([1, 403]), { maxTokens: 100000, stops: [], sampling: { ...workerData.sampling, temperature: 1, seed }, grammar: '', topLogprobs: -1, cachePartition: '' }, {
        onText: () => { if (++pieces === 20) parentPort.postMessage('generating'); },
        onDone: (r) => parentPort.postMessage(r),
        onError: (e) => parentPort.postMessage(e),
      });
    }
  `;
  return new Promise((resolvePromise, reject) => {
    const messages: unknown[] = [];
    const worker = tsWorker(
      body,
      { modelPath, sampling: GREEDY },
      { engineModule: 'src/worker/native-slot-engine.ts' },
    );
    worker.on('message', (m: unknown) => {
      messages.push(m);
      if (m === 'generating') void worker.terminate();
    });
    worker.once('error', reject);
    worker.once('exit', (exitCode) => resolvePromise({ exitCode, messages }));
  });
}
