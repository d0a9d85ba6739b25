import type { GenerationJob, JobRelay } from '../../native/generation-job.ts';
import {
  loadHearthNative,
  type NativeLoopEvent,
  type NativeLoopOptions,
  type NativeLoopStats,
  type NativeSlotLoop,
} from '../../native/binding.ts';
import { contextLengthExceeded } from '../errors/index.ts';
import type { EngineFailureCode } from '../errors/engine-failure.ts';
import type { SlotEngine, SlotJobEvents, SlotJobHandle, SlotJobResult } from './slot-engine.ts';

/**
 * The default engine: Hearth's native continuous-batching loop (native/, a C++ addon over the prebuilt
 * libllama of node-llama-cpp). One llama.cpp context holds `slots` sequences of `contextSize` tokens
 * each; a native thread decodes every active slot in one llama_decode per step, samples, detects stop
 * strings and sends each step's text for all slots back in one call. A job with `relay` sends its events to
 * that relay (another thread) instead; here it then only ends (onDone / onError).
 *
 * Threads: created and used on one JavaScript thread (a model worker); job callbacks run on that
 * thread. Tokenization and the chat template happen elsewhere (node-llama-cpp, vocabulary only, in
 * the same worker): this engine takes prompt token ids and returns text. Call `getLlama({ gpu: false })`
 * there so node-llama-cpp maps the same CPU libllama file as the addon.
 */

/**
 * The loop's settings (native/binding.ts NativeLoopOptions), passed to the addon as they are: what is left
 * out takes the addon's own value. contextSize is the KV tokens per slot (a prompt may use contextSize - 1).
 */
export type NativeSlotEngineOptions = NativeLoopOptions;

/**
 * The loop's 'ready' event: llama_n_ctx (contextTotal), llama_n_batch (batchSize), the compute threads decoding uses
 * (the calibrated count when calibrateCores was set) and whether they persist (threadPool), the ggml CPU backend
 * library in use (e.g. libggml-cpu-zen4.so), the calibration's measurements (absent when not calibrated), the layers
 * offloaded to the GPU (0: computes on the CPU) and that GPU, and whether it is a BERT-family encoder that embeds and
 * refuses every generation job (embeddingsOnly, native/src/model_kind.h).
 */
export type NativeLoadReport = Readonly<Omit<Extract<NativeLoopEvent, { type: 'ready' }>, 'type'>>;

/** A refusal of submit() or a load failure; `code` is stable, the message is for people. */
export class NativeEngineError extends Error {
  constructor(
    readonly code: EngineFailureCode,
    message: string,
  ) {
    super(message);
    this.name = 'NativeEngineError';
  }
}

/** Whether the addon is built and loadable here (loads it once per thread; cheap). */
export function nativeAddonAvailable(): { ok: true } | { ok: false; reason: string } {
  const native = loadHearthNative();
  return native.ok ? { ok: true } : { ok: false, reason: native.reason };
}

/** Loads the model on the native loop's thread; resolves once the context is ready. */
export function loadNativeSlotEngine(options: NativeSlotEngineOptions): Promise<SlotEngine> {
  return loadNativeSlotEngineInternal(options);
}

/** As loadNativeSlotEngine, typed as the concrete engine (tests and benchmarks read its extra fields). */
export async function loadNativeSlotEngineInternal(
  options: NativeSlotEngineOptions,
  signal?: AbortSignal,
): Promise<NativeSlotEngine> {
  const o = options;
  for (const key of ['contextSize', 'slots', 'threads', 'batchSize'] as const) {
    const v = o[key];
    if (v !== undefined && (!Number.isInteger(v) || v < 1))
      throw new NativeEngineError('invalid_option', `${key} must be a positive integer, got ${v}`);
  }
  const native = loadHearthNative();
  if (!native.ok) throw new NativeEngineError('addon_unavailable', native.reason);
  signal?.throwIfAborted();

  // `signal` aborting while the model loads disposes the loop: llama.cpp stops the load at its next progress
  // report and the promise rejects with the signal's reason. One that aborts after 'ready' is the caller's to
  // handle (the engine resolves; dispose it).
  return new Promise<NativeSlotEngine>((resolve, reject) => {
    let engine: NativeSlotEngine | undefined;
    const loop = new native.binding.SlotLoop(o, (events) => {
      if (engine) return engine.handle(events);
      for (const e of events) {
        if (e.type === 'ready') {
          signal?.removeEventListener('abort', stopLoading);
          engine = new NativeSlotEngine(loop, o.slots, e);
          resolve(engine);
        } else if (e.type === 'loadFailed') {
          signal?.removeEventListener('abort', stopLoading);
          reject(signal?.aborted ? signal.reason : new NativeEngineError('model_load_failed', e.message));
        }
      }
    });
    const stopLoading = () => loop.dispose();
    signal?.addEventListener('abort', stopLoading, { once: true });
  });
}

interface JobState {
  events: SlotJobEvents;
  /** The job asked for logprobs: every onText carries them (the addon omits an empty list). */
  wantsLogprobs: boolean;
  cancelRequested: boolean;
  /** onDone / onError already called (a callback threw, or the job ended). */
  ended: boolean;
}

export class NativeSlotEngine implements SlotEngine {
  readonly kind = 'native' as const;
  readonly relaysEvents = true;
  readonly contextSize: number;
  /** What the loop reported once the model loaded: context, batch, threads, CPU backend, GPU placement, calibration. */
  readonly loaded: NativeLoadReport;

  /** Jobs submitted whose terminal native event has not arrived yet (their slots are taken). */
  private readonly jobs = new Map<number, JobState>();
  private nextJobId = 1;
  private disposing: Promise<void> | undefined;
  private resolveDisposed: (() => void) | undefined;

  /** @internal created by loadNativeSlotEngine once the loop reported 'ready'. */
  constructor(
    private readonly loop: NativeSlotLoop,
    readonly slotCount: number,
    ready: Extract<NativeLoopEvent, { type: 'ready' }>,
  ) {
    this.contextSize = ready.contextSize;
    const { type: _, ...loaded } = ready;
    this.loaded = loaded;
  }

  /** Jobs holding a slot right now. */
  get activeJobs(): number {
    return this.jobs.size;
  }

  /** The loop's counters (decode steps, prompt / generated tokens, KV stream migrations). */
  stats(): NativeLoopStats {
    return this.loop.stats();
  }

  submit(promptTokens: Uint32Array, job: GenerationJob, events: SlotJobEvents, relay?: JobRelay): SlotJobHandle {
    if (this.disposing) throw new NativeEngineError('engine_disposed', 'the engine is disposed');
    const n = promptTokens.length;
    if (n === 0) throw new NativeEngineError('empty_prompt', 'the prompt has no tokens');
    if (n + 1 > this.contextSize) throw contextLengthExceeded(n, this.contextSize);
    // Twice the slots: an interactive job may wait in the loop for a batch job's slot (the loop parks that job).
    if (this.jobs.size >= 2 * this.slotCount)
      throw new NativeEngineError('slots_busy', `all ${this.slotCount} slots are busy and ${this.slotCount} jobs wait`);

    const id = this.allocateJobId();
    const refusal = this.loop.submit(id, promptTokens, job, relay);
    if (refusal) {
      if (refusal.code === 'context_length_exceeded') throw contextLengthExceeded(n, this.contextSize);
      throw new NativeEngineError(refusal.code, refusal.message);
    }
    const state: JobState = { events, wantsLogprobs: job.topLogprobs >= 0, cancelRequested: false, ended: false };
    this.jobs.set(id, state);
    return {
      cancel: () => {
        if (state.cancelRequested || state.ended || !this.jobs.has(id)) return;
        state.cancelRequested = true;
        this.loop.cancel(id);
      },
      yieldSlot: () => {
        if (!state.cancelRequested && !state.ended && this.jobs.has(id)) this.loop.yieldSlot(id);
      },
    };
  }

  /**
   * Unit vectors of token inputs (flat, `dimensions` floats each), batched on the loop's model in a second
   * context (native/src/embedder.h), off this thread, while the loop goes on generating. Rejects with an Error
   * whose `code` is engine_disposed, engine_not_ready, invalid_input or embedding_failed.
   */
  embed(inputs: Uint32Array[]): Promise<{ vectors: Float32Array; dimensions: number; passes: number }> {
    if (this.disposing) return Promise.reject(new NativeEngineError('engine_disposed', 'the engine is disposed'));
    return this.loop.embed(inputs);
  }

  dispose(): Promise<void> {
    if (!this.disposing) {
      this.disposing = new Promise<void>((resolve) => {
        this.resolveDisposed = resolve;
      });
      this.loop.dispose();
    }
    return this.disposing;
  }

  /** @internal the loop's events, on this engine's thread. */
  handle(events: NativeLoopEvent[]): void {
    for (const e of events) {
      if (e.type === 'disposed') {
        this.resolveDisposed?.();
        continue;
      }
      if (e.type === 'ready' || e.type === 'loadFailed') continue;
      const state = this.jobs.get(e.job);
      if (!state) continue;
      if (e.type === 'done' || e.type === 'error') this.jobs.delete(e.job);
      if (state.ended) continue;
      try {
        this.dispatch(state, e);
      } catch (err) {
        this.callbackFailed(e.job, state, err);
      }
    }
  }

  private dispatch(state: JobState, e: Exclude<NativeLoopEvent, { type: 'ready' | 'loadFailed' | 'disposed' }>): void {
    switch (e.type) {
      case 'prompt':
        if (!state.cancelRequested)
          state.events.onPrompt?.({ promptTokens: e.promptTokens, cachedTokens: e.cachedTokens });
        return;
      case 'text':
        if (!state.cancelRequested) {
          if (state.wantsLogprobs) state.events.onText(e.text, e.tokens, e.logprobs ?? []);
          else state.events.onText(e.text, e.tokens);
        }
        return;
      case 'done': {
        state.ended = true;
        const result: SlotJobResult = {
          finishReason: state.cancelRequested ? 'cancelled' : e.finishReason,
          promptTokens: e.promptTokens,
          cachedTokens: e.cachedTokens,
          completionTokens: e.completionTokens,
          ...(e.stop !== undefined ? { stop: e.stop } : {}),
        };
        state.events.onDone(result);
        return;
      }
      case 'error':
        state.ended = true;
        state.events.onError({ message: e.message, code: e.code });
        return;
    }
  }

  /** A job callback threw: that job ends with onError and its slot is cancelled; other jobs go on. */
  private callbackFailed(id: number, state: JobState, err: unknown): void {
    const wasEnded = state.ended;
    state.ended = true;
    if (this.jobs.has(id) && !state.cancelRequested) {
      state.cancelRequested = true;
      this.loop.cancel(id);
    }
    const message = err instanceof Error ? err.message : String(err);
    if (wasEnded) {
      process.emitWarning(`native engine: a job's terminal callback threw: ${message}`);
      return;
    }
    try {
      state.events.onError({ message: `job callback failed: ${message}`, code: 'callback_failed' });
    } catch (again) {
      process.emitWarning(
        `native engine: a job's onError threw: ${again instanceof Error ? again.message : String(again)}`,
      );
    }
  }

  private allocateJobId(): number {
    do {
      this.nextJobId = this.nextJobId >= 0xffffffff ? 1 : this.nextJobId + 1;
    } while (this.jobs.has(this.nextJobId));
    return this.nextJobId;
  }
}
