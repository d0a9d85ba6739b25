import { existsSync } from 'node:fs';
import { createRequire } from 'node:module';
import { relative } from 'node:path';
import { ADDON_PATH } from './paths.ts';
import type { GenerationJob, JobRelay, NativeFailureCode, NativeTuning, TokenLogprob } from './generation-job.ts';

/**
 * Typed loader for native/build/hearth_native.node (built by native/build.ts). The addon is
 * context-aware: each thread that loads it gets its own instance; loading it also maps the prebuilt
 * libllama of node-llama-cpp into the process (one copy, shared with node-llama-cpp).
 * `HEARTH_NATIVE_ADDON` overrides the path.
 */

/**
 * A loop's settings. The tuning fields (NativeTuning) left out take the addon's own values (those of
 * native/src/loop_types.h LoopOptions; the service passes every one, as its config resolved them).
 */
export interface NativeLoopOptions extends Partial<NativeTuning> {
  modelPath: string;
  /** KV tokens per slot. */
  contextSize: number;
  slots: number;
  threads: number;
  /** Threads for prompt batches. Defaults to `threads`. */
  threadsBatch?: number;
  /** Most tokens per llama_decode step. Defaults to 512 (raised to `slots` if smaller). */
  batchSize?: number;
  /** Folder of the ggml CPU backends. Defaults to the folder of the loaded libllama. */
  backendDir?: string;
  /** ggml GPU backend library (libggml-cuda.so built with GGML_BACKEND_DL), loaded once per process. Needed when gpuLayers != 0. */
  gpuBackend?: string;
  /** Model layers offloaded to the backend's first GPU: -1 = all, 0 (default) = CPU only. */
  gpuLayers?: number;
  /** Threads that sample a step's output rows (the loop's own included). Default 0 = auto: on a GPU min(8, cores / 2), else 1. */
  samplerThreads?: number;
  /** > 0: time 1..threads compute threads at load and use the best for a machine of this many cores. */
  calibrateCores?: number;
  /** JavaScript work (ms) the calibration allows for per step (default 0.05) and per token a step forwards (default 0.025). */
  calibrateJsStepMs?: number;
  calibrateJsTokenMs?: number;
}

/** The GPU a loop's model was offloaded to (ggml's device name, e.g. CUDA0, and description, e.g. NVIDIA H100 80GB HBM3). */
export interface NativeGpuDevice {
  name: string;
  description: string;
  memoryFreeBytes: number;
  memoryTotalBytes: number;
}

/** One candidate of the load-time thread calibration. */
export interface NativeThreadTiming {
  threads: number;
  /** Median llama_decode time of one step with a row per slot. */
  msPerStep: number;
  /** With the JavaScript allowance (see native/src/compute_threads.h). */
  estimateMs: number;
}

/** The step the calibration timed: `rows` tokens over `history` positions per sequence, and the JavaScript allowance it added (ms). */
export interface NativeCalibrationStep {
  rows: number;
  history: number;
  jsMs: number;
}

/** Events of one slot loop, delivered in order, in arrays (one call per loop step or fewer). */
export type NativeLoopEvent =
  | {
      type: 'ready';
      contextSize: number;
      contextTotal: number;
      batchSize: number;
      vocabSize: number;
      threads: number;
      threadPool: boolean;
      cpuBackend: string;
      calibration?: NativeThreadTiming[];
      calibrationStep?: NativeCalibrationStep;
      gpuLayers: number;
      modelLayers: number;
      embeddingsOnly: boolean;
      gpuDevices: NativeGpuDevice[];
    }
  | { type: 'loadFailed'; message: string }
  | {
      type: 'prompt';
      job: number;
      promptTokens: number;
      cachedTokens: number;
      /** Decode steps that evaluated this prompt (chunks). */ promptSteps: number;
    }
  | { type: 'text'; job: number; text: string; tokens: number; logprobs?: TokenLogprob[] }
  /** `stop`: the stop string that ended the text, when one did. */
  | {
      type: 'done';
      job: number;
      finishReason: 'stop' | 'length' | 'cancelled';
      promptTokens: number;
      cachedTokens: number;
      completionTokens: number;
      stop?: string;
    }
  | { type: 'error'; job: number; code: NativeFailureCode; message: string }
  | { type: 'disposed' };

export interface NativeSubmitRefusal {
  /** Every failure code but those only a running job (grammar) or an embedding ends with. */
  code: Exclude<NativeFailureCode, 'invalid_grammar' | 'grammar_failed' | 'embedding_failed' | 'invalid_input'>;
  message: string;
}

export interface NativeSlotLoop {
  /**
   * Queues a job for the next step; returns why not instead of throwing for expected refusals. `job` is taken as
   * it is (a field missing or out of range throws). With `relay`, the job's events (prompt, text, done / error;
   * `job` = `relay.tag`) go to that EventRelay (any thread of the process); this loop's own onEvents then gets
   * only the job's done / error. A closed relay: refusal 'relay_closed'.
   */
  submit(
    jobId: number,
    tokens: Uint32Array | Int32Array,
    job: GenerationJob,
    relay?: JobRelay,
  ): NativeSubmitRefusal | undefined;
  /** The job ends with a 'done' (cancelled) event at the next step boundary. */
  cancel(jobId: number): void;
  /**
   * The running job gives its slot to the next job that waits in the loop for one (fair share between tenants,
   * decided by the caller): parked, resumed when a slot frees, its answer unchanged. A no-op for a job not on a slot.
   */
  yieldSlot(jobId: number): void;
  /** Cancels every job, frees context and model, then reports 'disposed'. Idempotent. */
  dispose(): void;
  /** Counters since the loop started. */
  stats(): NativeLoopStats;
  /**
   * Unit vectors (L2-normalised, pooled per input: the GGUF's declared pooling, else mean) of 1..contextSize-token
   * inputs, flat in the inputs' order; computed off this thread in an embedding context on the loop's model,
   * created at the first call; as many inputs per llama_decode as fit (native/src/embedder.h). Rejects with an
   * Error whose `code` is engine_not_ready, engine_disposed, invalid_input or embedding_failed.
   */
  embed(inputs: Uint32Array[]): Promise<{ vectors: Float32Array; dimensions: number; passes: number }>;
}

export interface NativeLoopStats {
  /** llama_decode calls. */
  steps: number;
  /** Prompt tokens evaluated (reused prefix tokens excluded). */
  promptTokens: number;
  generatedTokens: number;
  /** KV streams copied to close gaps between busy slots. */
  migrations: number;
  /** Jobs that started from a host prompt cache entry. */
  promptCacheRestores: number;
  /** Jobs that looked in the host prompt cache (every admitted job while it is on). */
  promptCacheLookups: number;
  /** State bytes and entries the host prompt cache holds now (updated at each lookup). */
  promptCacheBytes: number;
  promptCacheEntries: number;
  /** KV cells the running jobs' sequences hold now (prompt + generated tokens, a reused prefix included). */
  kvCellsUsed: number;
  /** KV cells of the whole context (llama_n_ctx). */
  kvCellsTotal: number;
  /** Batch jobs parked so that a waiting interactive job got their slot (since the loop started). */
  preemptions: number;
  /** Batch jobs parked now, waiting to resume. */
  parked: number;
}

export interface NativeBuildInfo {
  headerLlamaVersion: string;
  headerGgmlVersion: string;
  headerCommit: string;
  llamaVersion: string;
  ggmlVersion: string;
  ggmlCommit: string;
  versionsMatch: boolean;
  mismatch?: string;
  maxSlots: number;
}

/**
 * Receives, on the thread that created it, the events of jobs submitted to any thread's SlotLoop with
 * a `relay` { id, tag } (native/src/event_relay.h). Never keeps the event loop alive.
 */
export interface NativeEventRelay {
  /** Process-wide, never 0. */
  readonly id: number;
  /** Idempotent: unregisters; later events for it are dropped (their loops go on). */
  close(): void;
}

export interface HearthNativeBinding {
  SlotLoop: new (options: NativeLoopOptions, onEvents: (events: NativeLoopEvent[]) => void) => NativeSlotLoop;
  EventRelay: new (onEvents: (events: NativeLoopEvent[]) => void) => NativeEventRelay;
  buildInfo(): NativeBuildInfo;
  /**
   * Loads ggml's CPU backend for the whole process now: the best libggml-cpu-*.so of `dir` this CPU can execute
   * (default: the folder of the loaded libllama), unless one is loaded already (the first load wins; a SlotLoop's
   * `backendDir` is such a load). Returns the file name of the library in use; throws when none can be loaded.
   */
  loadCpuBackend(dir?: string): string;
  /** The greedy sampler's choice: the index of the first largest value; `plainScan` = the reference scan's answer. */
  firstMaxIndex(values: Float32Array, plainScan?: boolean): number;
  /** The tokens of the k largest values, largest first (the lower token first among equals): top-k's candidates. */
  topKTokens(values: Float32Array, k: number): Int32Array;
}

/** The addon's own exports: the same, except that deliveries come as flat arrays (native/src/loop_event_js.h). */
interface RawBinding extends Omit<HearthNativeBinding, 'SlotLoop' | 'EventRelay'> {
  SlotLoop: new (options: NativeLoopOptions, onEvents: (flat: unknown[]) => void) => NativeSlotLoop;
  EventRelay: new (onEvents: (flat: unknown[]) => void) => NativeEventRelay;
}

/** Slots per event in a delivery (kEventSlots), and the slot-0 codes (EventKind's order). */
const EVENT_SLOTS = 7;
const enum Kind {
  Ready,
  LoadFailed,
  Prompt,
  Text,
  Done,
  Error,
  Disposed,
}

/** One delivery of the addon as NativeLoopEvents (layout: native/src/loop_event_js.h). */
function decodeLoopEvents(flat: unknown[]): NativeLoopEvent[] {
  const out: NativeLoopEvent[] = [];
  for (let i = 0; i + EVENT_SLOTS <= flat.length; i += EVENT_SLOTS) {
    const job = flat[i + 1] as number;
    const a = flat[i + 2] as number;
    const b = flat[i + 3] as number;
    const c = flat[i + 4] as number;
    const s = flat[i + 5] as string;
    switch (flat[i] as Kind) {
      case Kind.Ready:
        out.push(flat[i + 6] as Extract<NativeLoopEvent, { type: 'ready' }>);
        break;
      case Kind.LoadFailed:
        out.push({ type: 'loadFailed', message: s });
        break;
      case Kind.Prompt:
        out.push({ type: 'prompt', job, promptTokens: a, cachedTokens: b, promptSteps: c });
        break;
      case Kind.Text: {
        const logprobs = flat[i + 6] as TokenLogprob[] | undefined;
        out.push(
          logprobs === undefined
            ? { type: 'text', job, text: s, tokens: a }
            : { type: 'text', job, text: s, tokens: a, logprobs },
        );
        break;
      }
      case Kind.Done: {
        const stop = flat[i + 6] as string | undefined;
        const done = {
          type: 'done' as const,
          job,
          finishReason: s as 'stop' | 'length' | 'cancelled',
          promptTokens: a,
          cachedTokens: b,
          completionTokens: c,
        };
        out.push(stop === undefined ? done : { ...done, stop });
        break;
      }
      case Kind.Error:
        out.push({ type: 'error', job, code: s as NativeFailureCode, message: flat[i + 6] as string });
        break;
      case Kind.Disposed:
        out.push({ type: 'disposed' });
        break;
    }
  }
  return out;
}

/** The addon's classes with their deliveries decoded (a constructor returning the native object). */
function decodingBinding(raw: RawBinding): HearthNativeBinding {
  function SlotLoop(options: NativeLoopOptions, onEvents: (events: NativeLoopEvent[]) => void): NativeSlotLoop {
    return new raw.SlotLoop(options, (flat) => onEvents(decodeLoopEvents(flat)));
  }
  function EventRelay(onEvents: (events: NativeLoopEvent[]) => void): NativeEventRelay {
    return new raw.EventRelay((flat) => onEvents(decodeLoopEvents(flat)));
  }
  return {
    SlotLoop: SlotLoop as unknown as HearthNativeBinding['SlotLoop'],
    EventRelay: EventRelay as unknown as HearthNativeBinding['EventRelay'],
    buildInfo: () => raw.buildInfo(),
    loadCpuBackend: (dir?: string) => raw.loadCpuBackend(dir),
    firstMaxIndex: (values: Float32Array, plainScan?: boolean) => raw.firstMaxIndex(values, plainScan),
    topKTokens: (values: Float32Array, k: number) => raw.topKTokens(values, k),
  };
}

/** A job's event (what an EventRelay delivers). */
export type NativeJobEvent = Extract<NativeLoopEvent, { job: number }>;

/**
 * A new EventRelay on this thread; null where the addon cannot load here. Hearth's main thread opens one for
 * the model workers' native loops (main.ts hands this to the engine). A relay carries job events only: a loop
 * routes nothing else to it (SlotLoopWrap::post).
 */
export function openEventRelay(onEvents: (events: NativeJobEvent[]) => void): NativeEventRelay | null {
  const native = loadHearthNative();
  if (!native.ok) return null;
  return new native.binding.EventRelay(onEvents as (events: NativeLoopEvent[]) => void);
}

export type HearthNativeLoad = { ok: true; binding: HearthNativeBinding; path: string } | { ok: false; reason: string };

let loaded: HearthNativeLoad | undefined;

/** Loads the addon once per thread; never throws. */
export function loadHearthNative(): HearthNativeLoad {
  if (loaded) return loaded;
  const path = process.env.HEARTH_NATIVE_ADDON ?? ADDON_PATH;
  if (!existsSync(path)) {
    const shown = relative(process.cwd(), path);
    loaded = {
      ok: false,
      reason: `${shown.startsWith('..') ? path : shown} is not built (run \`node --import tsx native/build.ts\`)`,
    };
    return loaded;
  }
  try {
    const binding = decodingBinding(createRequire(import.meta.url)(path) as RawBinding);
    const info = binding.buildInfo();
    loaded = info.versionsMatch
      ? { ok: true, binding, path }
      : { ok: false, reason: info.mismatch ?? 'llama.cpp header and library versions differ' };
  } catch (err) {
    loaded = { ok: false, reason: `cannot load ${path}: ${err instanceof Error ? err.message : String(err)}` };
  }
  return loaded;
}
