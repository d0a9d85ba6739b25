import type { EngineFailure } from '../errors/engine-failure.ts';
import type { GenerationJob, JobRelay, NativeTuning, TokenLogprob } from '../../native/generation-job.ts';
import type { ChatMessage, FunctionTool, RawPrompt } from '../protocol/chat-request.ts';
import type { MessagePort } from 'node:worker_threads';

/**
 * Messages between the main thread and model workers. Everything here is structured-clone data.
 * Per request: the main thread runs one Piscina task carrying a MessagePort; events flow back on that
 * port and a cancel message flows forward. The task's promise settles after the terminal event.
 */

/** The instant test engine has no vocabulary: it counts one token per this many bytes of the messages. */
export const INSTANT_TOKEN_BYTES = 4;

export type { GenerationJob, JobRelay, NativeTuning } from '../../native/generation-job.ts';

/** workerData of every model worker (set once at pool creation). */
export interface ModelWorkerData {
  engine: 'native' | 'node-llama-cpp' | 'instant' | 'auto';
  modelPath: string;
  contextSize: number;
  slots: number;
  threads: number;
  /** Threads to use instead if `auto` falls back to the node-llama-cpp engine. */
  fallbackThreads: number;
  batchSize: number;
  /** As the config resolved it; the worker passes it to the addon as it is. */
  native: NativeTuning;
  /** Native engine only, > 0: calibrate 1..threads compute threads at load for this many cores (thread-plan.ts). */
  calibrateCores: number;
  /** Native engine only: the ggml CPU kernels to load (engine/cpu-kernels.ts). */
  cpuKernels: CpuKernelsKind;
  /** Native engine only: the GPU offload engine/gpu-offload.ts chose (absent: CPU). layers -1 = all. */
  gpu?: { library: string; layers: number };
  /** The BroadcastChannel on which the pool's owner sends WorkerStop before it terminates the workers. */
  stopChannel: string;
}

/** How the native engine computes, as it reported at load (logged with "model ready"). */
export interface NativeComputeInfo {
  threadPool: boolean;
  /** The ggml CPU backend library in use, e.g. libggml-cpu-zen4.so. */
  cpuBackend: string;
  /** The load-time thread calibration (`--threads 0`): ms per decode step for each thread count tried. */
  calibration?: { threads: number; msPerStep: number; estimateMs: number }[];
  /** The step it timed: rows (tokens), history (positions per sequence), jsMs (the JavaScript allowance per step). */
  calibrationStep?: { rows: number; history: number; jsMs: number };
}

/** Where a worker's llama.cpp computes, as loaded (logged with "model ready", in /health's engine). */
export interface GpuInfo {
  /** The GPU backend in use ('cuda', 'vulkan', 'metal'), or false: CPU only. */
  backend: string | false;
  /** The GPU devices that backend uses (empty on CPU). */
  devices: string[];
  /** Model layers offloaded to the GPU (0 on CPU). */
  gpuLayers: number;
  /** Native engine on a GPU: its memory once the model and context were loaded. */
  memory?: { freeBytes: number; totalBytes: number };
}

/** The GPU probe (engine/gpu-offload.ts, worker/gpu-probe.ts): one child process per candidate library. */
export type GpuProbeRequest =
  /** The ggml CUDA backend libraries at hand, best first (`explicit` alone when given: --gpu-backend). */
  | { action: 'list'; explicit?: string }
  /** Load `library`, offload `layers` (-1 = every layer) of the model and decode a few tokens. */
  | { action: 'run'; library: string; modelPath: string; layers: number };

export type GpuProbeAnswer =
  | { libraries: string[] }
  | {
      ok: true;
      device: { name: string; description: string; memoryFreeBytes: number; memoryTotalBytes: number };
      gpuLayers: number;
      modelLayers: number;
      decodeMs: number;
      completionTokens: number;
    }
  /** sawDevice: the backend loaded and listed a GPU (a failure past that point is worth a warning). */
  | { ok: false; reason: string; sawDevice: boolean };

/** The task payload of one generation: what the worker tokenizes, and the job it then submits as it is. */
export interface GenerationTask {
  /** The chat the template renders (unused when `prompt` is given). */
  messages: ChatMessage[];
  /** Functions the chat template shows the model ([]: none). */
  tools: FunctionTool[];
  /** A raw prompt (GenerationRequest.prompt): no chat template; `messages` and `tools` are then unused. null: the template. */
  prompt: RawPrompt | null;
  /** GenerationRequest.countOnly: build the prompt, answer its token count with 'done', generate nothing. */
  countOnly: boolean;
  /** GenerationRequest.promptSuffix: text after the rendered chat prompt ('' none). */
  promptSuffix: string;
  /** Every field decided by the engine (resolveGenerationJob); the worker only adds the template's own stop texts. */
  job: GenerationJob;
  /**
   * Present when the main thread holds an event relay: an engine that can (SlotEngine.relaysEvents) sends the
   * job's prompt / text / done / error there, skipping this worker's JavaScript; the port then carries only
   * 'start' and failures before the job reached the engine.
   */
  relay: JobRelay | null;
  port: MessagePort;
}

/** How a slot job ended (a cancelled job ends silently on the main thread). */
export type SlotFinishReason = 'stop' | 'length' | 'cancelled';

/** Worker -> main over the task's port (and the same events, converted, over the event relay). */
export type WorkerEvent =
  | { t: 'start' }
  | { t: 'prompt'; promptTokens: number; cachedTokens: number }
  | { t: 'text'; text: string; n: number; logprobs?: TokenLogprob[] }
  /** `stop`: the stop string that ended the text, when one did. */
  | {
      t: 'done';
      finishReason: SlotFinishReason;
      promptTokens: number;
      cachedTokens: number;
      completionTokens: number;
      stop?: string | undefined;
    }
  /** A failure as a code (mapped to the client's error on the main thread by toApiError; details for the log only). */
  | { t: 'error'; failure: EngineFailure };

/** Main -> worker over the task's port: 'cancel' the generation, or 'yield' its slot to the next job waiting for one (fair share). */
export type MainEvent = { t: 'cancel' } | { t: 'yield' };

/**
 * Main -> every worker of a pool, on ModelWorkerData.stopChannel, once no generation runs: each worker
 * aborts a load in progress (ModelHost.load stops at llama.cpp's next abort point and releases what it had
 * loaded), releases its model (awaiting every native call) and answers `worker-stopped`. Only
 * then are the threads terminated: one terminated with node-llama-cpp's async work in flight aborts the
 * whole process (the work's completion throws into the dead thread's env).
 */
export type WorkerStop = { t: 'stop' };

/** Worker -> main over parentPort (Piscina re-emits these as the pool's 'message' event). */
export type WorkerStatus =
  | {
      hearth: 'worker-ready';
      engine: 'native' | 'node-llama-cpp' | 'instant';
      contextSize: number;
      slots: number;
      threads: number;
      fallbackReason?: string;
      compute?: NativeComputeInfo;
      gpu?: GpuInfo;
    }
  | { hearth: 'worker-failed'; reason: string }
  /** loadAborted: the stop came while the model was loading, and the load was abandoned (nothing held). */
  | { hearth: 'worker-stopped'; loadAborted: boolean }
  /** The native engine's host prompt cache after a job (cumulative lookups / hits, bytes and entries now). */
  | { hearth: 'prompt-cache'; worker: number; lookups: number; hits: number; bytes: number; entries: number }
  /** The native loop's KV cells: held by the running jobs' sequences, and of the whole context (while jobs run). */
  | { hearth: 'kv-cache'; worker: number; used: number; total: number }
  /** The native loop's preemptions after a job: batch jobs parked for interactive ones (cumulative), and parked now. */
  | { hearth: 'preemptions'; worker: number; preemptions: number; parked: number };

/** node-llama-cpp's prebuilt ggml CPU library for this CPU family, or the one built for this very CPU. */
export type CpuKernelsKind = 'prebuilt' | 'native' | PrebuiltCpuVariant;
/** One of node-llama-cpp's prebuilt CPU libraries by name (libggml-cpu-VARIANT.so), instead of ggml's pick for this CPU. */
export type PrebuiltCpuVariant = `prebuilt:${string}`;
/** `--cpu-kernels`: a kind, or `auto` (time prebuilt and native, engine/cpu-kernels.ts). */
export type CpuKernelsMode = 'auto' | CpuKernelsKind;

/**
 * The CPU kernel probe, a child process (worker/cpu-kernel-probe.ts; argv[2] is the request as JSON, stdout one
 * JSON answer line). `describe`: whether the native kernels can be used here. `time`: the median ms of a decode
 * step with one row per slot, per compute-thread count, with the given kernels loaded.
 */
export type CpuKernelProbeRequest =
  | { action: 'describe' }
  | {
      action: 'time';
      kernels: 'prebuilt' | 'native';
      modelPath: string;
      slots: number;
      threads: number;
      cores: number;
    };

export type CpuKernelProbeAnswer =
  | { action: 'describe'; native: { stamp: string } | { reason: string } }
  | { action: 'time'; cpuBackend: string; timings: { threads: number; msPerStep: number }[] };
