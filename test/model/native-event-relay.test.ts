/**
 * The native event relay (native/src/event_relay.h, src/engine/main-event-relay.ts): a job submitted in a
 * worker thread with a relay sends its events straight to the thread that created the relay, and the
 * worker's engine sees only the job's end. On the project's generated tiny llama (no download); needs
 * the built addon (skipped, saying why, when it is not built).
 */
import type { Worker } from 'node:worker_threads';
import { getLlama, LlamaLogLevel } from 'node-llama-cpp';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { ensureTinyModel } from '../../models/test-model-path.ts';
import { DEFAULT_TINY_REPLY } from '../../models/tiny-llama.ts';
import { openEventRelay } from '../../native/binding.ts';
import { MainEventRelay } from '../../src/engine/main-event-relay.ts';
import type { JobRelay, WorkerEvent } from '../../src/engine/worker-protocol.ts';
import { nativeAddonAvailable } from '../../src/worker/native-slot-engine.ts';
import { tsWorker } from '../helpers/ts-worker.ts';
import { GREEDY_SAMPLING } from '../helpers/generation-job.ts';

const addon = nativeAddonAvailable();
const skip = addon.ok ? '' : `native addon unavailable: ${addon.reason}`;

/** What the worker's own engine callbacks saw of one job. */
interface WorkerSide {
  calls: string[];
  text: string;
  result?: { finishReason: string; completionTokens: number };
  error?: { code: string; message: string };
}

/** A worker thread holding a native engine (2 slots); each `submit` message answers with its WorkerSide at the job's end. */
class EngineWorker {
  private readonly worker: Worker;
  private readonly waiting = new Map<number, (w: WorkerSide) => void>();
  private nextId = 1;
  readonly ready: Promise<void>;

  constructor(modelPath: string) {
    const body = `
      const { loadNativeSlotEngine } = engineModule;
      const engine = await loadNativeSlotEngine({ modelPath: workerData.modelPath, contextSize: 2048, slots: 2, threads: 1 });
      const handles = new Map();
      parentPort.on('message', (m) => {
        if (m.cancel) return handles.get(m.cancel)?.cancel();
        const side = { calls: [], text: '' };
        const end = () => { handles.delete(m.id); parentPort.postMessage({ id: m.id, side }); };
        try {
          const handle = engine.submit(Uint32Array.from(m.tokens), { maxTokens: m.maxTokens, stops: [], sampling: workerData.sampling, grammar: '', topLogprobs: -1, cachePartition: '' }, {
            onPrompt: () => side.calls.push('prompt'),
            onText: (t) => { side.calls.push('text'); side.text += t; },
            onDone: (r) => { side.calls.push('done'); side.result = { finishReason: r.finishReason, completionTokens: r.completionTokens }; end(); },
            onError: (e) => { side.calls.push('error'); side.error = { code: e.code, message: e.message }; end(); },
          }, m.relay);
          handles.set(m.id, handle);
        } catch (err) {
          side.calls.push('threw'); side.error = { code: err.code, message: err.message }; end();
        }
      });
      parentPort.postMessage('ready');
    `;
    const sampling = GREEDY_SAMPLING;
    this.worker = tsWorker(body, { modelPath, sampling }, { engineModule: 'src/worker/native-slot-engine.ts' });
    this.ready = new Promise((ok, fail) => {
      this.worker.on('message', (m: 'ready' | { id: number; side: WorkerSide }) => {
        if (m === 'ready') return ok();
        this.waiting.get(m.id)?.(m.side);
        this.waiting.delete(m.id);
      });
      this.worker.once('error', fail);
    });
  }

  /** Submits in the worker; resolves with what the worker's callbacks saw once the job ended there. */
  run(tokens: number[], maxTokens: number, relay?: JobRelay): { id: number; ended: Promise<WorkerSide> } {
    const id = this.nextId++;
    const ended = new Promise<WorkerSide>((ok) => this.waiting.set(id, ok));
    this.worker.postMessage({ id, tokens, maxTokens, ...(relay ? { relay } : {}) });
    return { id, ended };
  }

  cancel(id: number): void {
    this.worker.postMessage({ cancel: id });
  }

  terminate(): Promise<number> {
    return this.worker.terminate();
  }
}

/** The relayed events of one route, and a promise of its terminal event. */
function collect(
  relay: MainEventRelay,
  onEvent?: (e: WorkerEvent, route: JobRelay) => void,
): { route: JobRelay; events: WorkerEvent[]; end: Promise<WorkerEvent> } {
  const events: WorkerEvent[] = [];
  let settle: (e: WorkerEvent) => void = () => {};
  const end = new Promise<WorkerEvent>((ok) => {
    settle = ok;
  });
  const route = relay.route((e) => {
    events.push(e);
    onEvent?.(e, route);
    if (e.t === 'done' || e.t === 'error') settle(e);
  });
  return { route, events, end };
}

const textOf = (events: WorkerEvent[]) => events.map((e) => (e.t === 'text' ? e.text : '')).join('');

describe.skipIf(skip !== '')(`native event relay${skip ? ` (skipped: ${skip})` : ''}`, () => {
  let worker: EngineWorker;
  let prompt: number[];
  /** Not ending in "\n": the tiny model never stops on its own after it. */
  let gibberish: number[];
  let relay: MainEventRelay;

  beforeAll(async () => {
    const modelPath = await ensureTinyModel();
    const llama = await getLlama({ gpu: false, build: 'never', logLevel: LlamaLogLevel.error });
    const vocab = await llama.loadModel({ modelPath, vocabOnly: true });
    prompt = [vocab.tokens.bos!, ...vocab.tokenize('Say hello\n')];
    gibberish = [vocab.tokens.bos!, ...vocab.tokenize('Say hello')];
    await vocab.dispose();
    await llama.dispose();
    worker = new EngineWorker(modelPath);
    await worker.ready;
    const opened = MainEventRelay.open(openEventRelay, (err) => {
      throw err;
    });
    if (!opened) throw new Error('the addon loads, so a relay must open');
    relay = opened;
  });
  afterAll(async () => {
    relay?.close();
    await worker?.terminate();
  });

  it("delivers a worker job's prompt, text and end to the relay thread; the worker sees only the end", async () => {
    const plain = await worker.run(prompt, 50).ended;
    expect(plain.calls[0]).toBe('prompt');
    expect(plain.text).toBe(DEFAULT_TINY_REPLY);

    const r = collect(relay);
    const side = await worker.run(prompt, 50, r.route).ended;
    const end = await r.end;
    expect(side).toEqual({ calls: ['done'], text: '', result: plain.result });
    expect(r.events[0]).toEqual({ t: 'prompt', promptTokens: prompt.length, cachedTokens: expect.any(Number) });
    expect(r.events.slice(1, -1).every((e) => e.t === 'text')).toBe(true);
    expect(textOf(r.events)).toBe(DEFAULT_TINY_REPLY);
    expect(r.events.reduce((n, e) => n + (e.t === 'text' ? e.n : 0), 0)).toBe(plain.result!.completionTokens);
    expect(end).toEqual({
      t: 'done',
      finishReason: 'stop',
      promptTokens: prompt.length,
      cachedTokens: expect.any(Number),
      completionTokens: plain.result!.completionTokens,
    });
    relay.unroute(r.route);
  });

  it("keeps each relayed job's events apart from another's and from an unrelayed job in the same batch", async () => {
    const a = collect(relay);
    const b = collect(relay);
    const [sideA, sideB] = await Promise.all([
      worker.run(prompt, 2, a.route).ended,
      worker.run(prompt, 50, b.route).ended,
    ]);
    await Promise.all([a.end, b.end]);
    expect(textOf(a.events)).toBe(DEFAULT_TINY_REPLY.slice(0, textOf(a.events).length));
    expect(a.events.at(-1)).toMatchObject({ t: 'done', finishReason: 'length', completionTokens: 2 });
    expect(textOf(b.events)).toBe(DEFAULT_TINY_REPLY);
    expect(sideA.calls).toEqual(['done']);
    expect(sideB.calls).toEqual(['done']);

    const c = collect(relay);
    const [relayed, unrelayed] = await Promise.all([
      worker.run(prompt, 50, c.route).ended,
      worker.run(prompt, 50).ended,
    ]);
    await c.end;
    expect(relayed.calls).toEqual(['done']);
    expect(unrelayed.text).toBe(DEFAULT_TINY_REPLY);
    expect(textOf(c.events)).toBe(DEFAULT_TINY_REPLY);
    for (const r of [a, b, c]) relay.unroute(r.route);
  });

  it('ends a relayed job cancelled from the worker on both threads', async () => {
    // The cancel goes main -> worker -> loop after the first relayed token, racing the job's own end. The
    // budget (2000 tokens) makes the race wide; an attempt whose job provably ran its whole budget before the
    // cancel arrived ends 'length' on the loop (the relay's truth) and is tried again, a bounded number of times.
    const budget = 2000;
    for (let attempt = 1; ; attempt++) {
      let job = 0;
      const r = collect(relay, (e) => {
        if (e.t === 'text') worker.cancel(job);
      });
      const run = worker.run(gibberish, budget, r.route);
      job = run.id;
      const side = await run.ended;
      const end = await r.end;
      relay.unroute(r.route);
      // The worker's engine reports a job it was asked to cancel as cancelled (the SlotEngine contract).
      expect(side.result?.finishReason).toBe('cancelled');
      if (end.t === 'done' && end.finishReason === 'length' && end.completionTokens === budget && attempt < 3) continue;
      expect(end).toMatchObject({ t: 'done', finishReason: 'cancelled' });
      expect(end.t === 'done' && end.completionTokens).toBeLessThan(budget);
      return;
    }
  });

  it("refuses a job for a closed relay, and a relay closed mid-job leaves the worker's job to end", async () => {
    const other = MainEventRelay.open(openEventRelay, () => {})!;
    let job = 0;
    let seen = 0;
    const r = collect(other, (e) => {
      if (e.t !== 'text' || ++seen > 1) return;
      other.close(); // events after this are dropped; the worker's job still ends
      worker.cancel(job);
    });
    const run = worker.run(gibberish, 100, r.route);
    job = run.id;
    expect((await run.ended).calls).toEqual(['done']);
    expect(r.events.some((e) => e.t === 'done')).toBe(false);

    const refused = await worker.run(prompt, 8, r.route).ended;
    expect(refused.calls).toEqual(['threw']);
    expect(refused.error?.code).toBe('relay_closed');
    // The worker's engine goes on serving.
    expect((await worker.run(prompt, 50).ended).text).toBe(DEFAULT_TINY_REPLY);
  });
});
