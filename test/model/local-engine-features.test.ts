/**
 * Grammar, logprobs, tools and the sampler extensions across the whole local engine (main thread ->
 * Piscina model worker -> slot engine -> back), for each engine kind, on the project's tiny GGUFs.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { openEventRelay } from '../../native/binding.ts';
import { ensureTinyChatModel, ensureTinyModel } from '../../models/test-model-path.ts';
import { DEFAULT_TINY_REPLY } from '../../models/tiny-llama.ts';
import { LocalEngine } from '../../src/engine/local-engine.ts';
import type { LocalEngineOptions } from '../../src/engine/local-engine-options.ts';
import { resolveModelSource } from '../../src/engine/model-source.ts';
import type { GenerationRequest, GenerationResult, TokenLogprob } from '../../src/engine/generation.ts';
import type { ApiError } from '../../src/errors/api-error.ts';
import { createLogger, type Logger, silentLogger } from '../../src/log/logger.ts';
import { createMetrics } from '../../src/metrics/metrics.ts';
import { nativeAddonAvailable } from '../../src/worker/native-slot-engine.ts';
import { OK_OBJECT_GRAMMAR } from '../helpers/grammars.ts';
import { TEST_NATIVE_TUNING } from '../helpers/native-tuning.ts';

interface Outcome {
  text: string;
  logprobs?: TokenLogprob[];
  result?: GenerationResult;
  error?: ApiError;
}

function generate(engine: LocalEngine, request: Partial<GenerationRequest>): Promise<Outcome> {
  return new Promise((resolve) => {
    const out: Outcome = { text: '' };
    engine.generate(
      { messages: [{ role: 'user', content: 'Say hello.' }], stop: [], temperature: 0, cachePartition: '', ...request },
      {
        onText: (text, logprobs) => {
          out.text += text;
          if (logprobs) (out.logprobs ??= []).push(...logprobs);
        },
        onDone: (result) => resolve({ ...out, result }),
        onError: (error) => resolve({ ...out, error }),
      },
    );
  });
}

/** Far above any load or cut on a loaded CI machine: the tests assert that the workers answered, not how fast. */
const WORKER_STOP_TIMEOUT_MS = 60_000;

/**
 * A LocalEngine as main.ts builds it (the native engine's events through the event relay): one worker with two
 * slots unless `options` says otherwise; not started.
 */
function newEngine(
  modelPath: string,
  kind: 'native' | 'node-llama-cpp' | 'instant',
  log: Logger,
  options: Partial<LocalEngineOptions> = {},
): LocalEngine {
  return new LocalEngine(
    {
      source: resolveModelSource(modelPath),
      modelsDir: '',
      engine: kind,
      workers: 1,
      slots: 2,
      threads: 1,
      cores: 2,
      batchSize: 128,
      queueLimit: 8,
      showPullProgress: false,
      native: TEST_NATIVE_TUNING,
      contextSize: 512,
      maxTokens: 64,
      pullStallTimeoutMs: 30_000,
      openRelay: openEventRelay,
      workerStopTimeoutMs: WORKER_STOP_TIMEOUT_MS,
      ...options,
    },
    createMetrics({ defaultMetrics: false }),
    log,
  );
}

/** newEngine's engine, started and ready. */
async function startEngine(
  modelPath: string,
  kind: 'native' | 'node-llama-cpp' | 'instant',
  log: Logger = silentLogger,
  limits = { contextSize: 512, maxTokens: 64 },
): Promise<LocalEngine> {
  const engine = newEngine(modelPath, kind, log, limits);
  await engine.start();
  if (engine.status().state !== 'ready') throw new Error(`engine not ready: ${engine.status().error}`);
  return engine;
}

/** The first log record with this message. */
function logged(lines: string[], msg: string): Record<string, unknown> | undefined {
  return lines.map((l) => JSON.parse(l) as Record<string, unknown>).find((r) => r['msg'] === msg);
}

const kinds = (['native', 'node-llama-cpp'] as const).filter((k) => k !== 'native' || nativeAddonAvailable().ok);

describe.each(kinds)('local engine (%s)', (kind) => {
  let chat: LocalEngine;
  let endless: LocalEngine;
  const chatLog: string[] = [];

  beforeAll(async () => {
    chat = await startEngine(
      await ensureTinyChatModel(),
      kind,
      createLogger('info', (line) => chatLog.push(line)),
    );
    endless = await startEngine(await ensureTinyModel({ reply: null }), kind);
  });
  afterAll(async () => {
    await chat?.dispose();
    await endless?.dispose();
  });

  it('says in "model ready" where it computes: the GPU backend for node-llama-cpp, the CPU backend for native', () => {
    const ready = logged(chatLog, 'model ready');
    expect(ready).toMatchObject({ engine: kind });
    if (kind === 'native') {
      // The engine's default is --gpu-layers 0: the native loop says it computes on the CPU, and with which library.
      expect(ready!['gpu']).toEqual({ backend: false, devices: [], gpuLayers: 0 });
      expect(ready!['cpuBackend']).toMatch(/^libggml-cpu-.+\.so$/);
      return;
    }
    const gpu = ready!['gpu'] as { backend: string | false; devices: string[]; gpuLayers: number };
    expect(Object.keys(gpu).sort()).toEqual(['backend', 'devices', 'gpuLayers']);
    if (gpu.backend === false) expect(gpu).toEqual({ backend: false, devices: [], gpuLayers: 0 });
    else expect(gpu.gpuLayers).toBeGreaterThan(0);
  });

  it('answers a plain request as before, with no logprobs', async () => {
    const r = await generate(chat, {});
    expect(r.text).toBe(DEFAULT_TINY_REPLY);
    expect(r.logprobs).toBeUndefined();
  });

  it('delivers logprobs with the text when asked', async () => {
    const r = await generate(chat, { topLogprobs: 2 });
    expect(r.text).toBe(DEFAULT_TINY_REPLY);
    expect(r.logprobs?.map((e) => e.token).join('')).toBe(DEFAULT_TINY_REPLY);
    for (const e of r.logprobs ?? []) {
      expect(e.top).toHaveLength(2);
      expect(e.top[0]!.logprob).toBeCloseTo(e.logprob, 5);
    }
  });

  it('enforces a grammar, and answers an invalid one with a 400 invalid_grammar', async () => {
    const r = await generate(endless, { grammar: OK_OBJECT_GRAMMAR, temperature: 1, seed: 4 });
    expect(r.result?.finishReason).toBe('stop');
    expect(JSON.parse(r.text)).toHaveProperty('ok');
    const bad = await generate(endless, { grammar: 'root ::= (' });
    expect(bad.error?.toData()).toMatchObject({ status: 400, type: 'invalid_request_error', code: 'invalid_grammar' });
    expect((await generate(endless, { maxTokens: 3 })).result).toMatchObject({
      finishReason: 'length',
      completionTokens: 3,
    });
  });

  it('passes tools to the prompt and the sampler extensions to the sampler', async () => {
    const tools = [
      { name: 'get_weather', parameters: { type: 'object', properties: { city: { type: 'string' } } }, strict: false },
    ];
    const plain = await generate(chat, { maxTokens: 8 });
    const withTools = await generate(chat, { maxTokens: 8, tools });
    expect(withTools.result!.promptTokens).toBeGreaterThan(plain.result!.promptTokens + 40); // the instructions and schema
    const greedy = await generate(endless, { maxTokens: 48 });
    const topK1 = await generate(endless, { maxTokens: 48, temperature: 2, topK: 1, seed: 3 });
    expect(topK1.text).toBe(greedy.text);
    const penalised = await generate(endless, { maxTokens: 48, repetitionPenalty: 100 });
    expect(penalised.text).not.toBe(greedy.text);
  });

  // A worker thread terminated with node-llama-cpp's async work in flight aborts the whole process: dispose()
  // terminates the workers only after they have answered WorkerStop (their models released).
  it('ends a generation that dispose() cuts with shutting_down, never leaving it open', async () => {
    const lines: string[] = [];
    const engine = await startEngine(
      await ensureTinyModel({ reply: null }),
      kind,
      createLogger('info', (line) => lines.push(line)),
      { contextSize: 4096, maxTokens: 4000 },
    );
    const outcome = new Promise<Outcome>((resolve) => {
      const out: Outcome = { text: '' };
      let disposing = false;
      engine.generate(
        { messages: [{ role: 'user', content: 'Say hello.' }], stop: [], temperature: 0, cachePartition: '' },
        {
          onText: (text) => {
            out.text += text;
            if (!disposing) {
              disposing = true;
              void engine.dispose();
            }
          },
          onDone: (result) => resolve({ ...out, result }),
          onError: (error) => resolve({ ...out, error }),
        },
      );
    });
    const r = await outcome;
    expect(r.text.length).toBeGreaterThan(0);
    if (r.error) expect(r.error.toData()).toMatchObject({ status: 503, code: 'shutting_down' });
    else expect(r.result?.finishReason).toBe('length'); // it reached the end of its context before the workers stopped
    await engine.dispose();
    expect(logged(lines, 'model workers stopped')).toMatchObject({ stopped: 1, workers: 1 });
  });

  // Contract "A client that leaves": a generation waiting for a slot gives its queue place back when cancelled, at
  // once (it waited in Piscina's queue, holding the place until a slot freed); one still waiting at dispose() ends.
  it('a generation cancelled while it waits for a slot leaves the queue at once; one waiting at dispose() ends with shutting_down', async () => {
    const engine = await startEngine(await ensureTinyModel({ reply: null }), kind, silentLogger, {
      contextSize: 4096,
      maxTokens: 4000,
    });
    const request = {
      messages: [{ role: 'user' as const, content: 'Say hello.' }],
      stop: [],
      temperature: 0,
      cachePartition: '',
    };
    const ended: string[] = [];
    const sink = (name: string) => ({
      onText: () => {},
      onDone: () => {
        ended.push(`${name}: done`);
      },
      onError: (e: ApiError) => {
        ended.push(`${name}: ${e.toData().code}`);
      },
    });
    engine.generate(request, sink('running 1'));
    engine.generate(request, sink('running 2'));
    const queued = engine.generate(request, sink('queued'));
    engine.generate(request, sink('still queued'));
    expect(engine.load()).toEqual({ running: 0, waiting: 4 }); // none started yet: all four wait
    for (let i = 0; i < 200 && engine.load().running < 2; i++) await new Promise((r) => setTimeout(r, 25));
    expect(engine.load()).toEqual({ running: 2, waiting: 2 });
    queued.cancel();
    expect(engine.load()).toEqual({ running: 2, waiting: 1 }); // synchronously: no worker had it
    expect(ended).toEqual([]); // a cancelled request's sink hears nothing more (its client is gone)
    await engine.dispose();
    expect(ended).toContain('still queued: shutting_down');
    expect(ended.filter((e) => e.startsWith('queued'))).toEqual([]);
    expect(engine.load()).toEqual({ running: 0, waiting: 0 });
  });

  it('disposed while its workers load: they abandon the load (or release the model, if it was done) before they end', async () => {
    const lines: string[] = [];
    let engine: LocalEngine | undefined;
    let disposed: Promise<void> | undefined;
    const log = createLogger('info', (line) => {
      lines.push(line);
      // Right after the pool is created (a microtask runs once start() awaits the workers).
      if (line.includes('"msg":"loading model"'))
        queueMicrotask(() => {
          disposed = engine!.dispose();
        });
    });
    engine = newEngine(await ensureTinyChatModel(), kind, log, { workers: 2, slots: 1 });
    await engine.start();
    await disposed;
    expect(engine.status().state).toBe('loading');
    const stopped = logged(lines, 'model workers stopped') as { loadsAborted?: number };
    expect(stopped).toMatchObject({ stopped: 2, workers: 2 });
    expect(stopped.loadsAborted).toBeGreaterThanOrEqual(0);
    expect(stopped.loadsAborted).toBeLessThanOrEqual(2);
    expect(lines.some((l) => l.includes('could not load the model'))).toBe(false); // an abandoned load is no failure
  });
});

describe('local engine (instant)', () => {
  let engine: LocalEngine;
  beforeAll(async () => {
    engine = await startEngine(await ensureTinyChatModel(), 'instant');
  });
  afterAll(async () => {
    await engine?.dispose();
  });

  it('accepts a grammar and tools and ignores them', async () => {
    const plain = await generate(engine, { maxTokens: 4 });
    const r = await generate(engine, {
      maxTokens: 4,
      grammar: OK_OBJECT_GRAMMAR,
      tools: [{ name: 'f', parameters: {}, strict: false }],
    });
    expect(r.text).toBe(plain.text);
    expect(r.result?.finishReason).toBe('length');
  });
});
