import type { CpuKernelsMode } from './cpu-kernels.ts';
import type { GpuLayersMode, GpuOffloadChoice } from './gpu-offload.ts';
import type { RelayOpener } from './main-event-relay.ts';
import type { ModelSource } from './model-source.ts';
import type { ModelWorkerData, NativeTuning } from './worker-protocol.ts';

/**
 * How one LocalEngine (local-engine.ts) serves its model: the source, the engine and its workers, slots, threads,
 * GPU offload and CPU kernels, context and batch, limits, and the pull's. main.ts makes one per model load from the
 * config (and the model's own settings); the engine reads it for its whole life and never changes it.
 */
export interface LocalEngineOptions {
  source: ModelSource;
  modelsDir: string;
  engine: ModelWorkerData['engine'];
  workers: number;
  /** Sequences per worker; undefined: DEFAULT_SLOTS, or DEFAULT_GPU_SLOTS when the native loop runs on a GPU. */
  slots: number | undefined;
  /** Native engine: layers to offload to a GPU (gpu-offload.ts); default 0 (CPU, nothing probed). */
  gpuLayers?: GpuLayersMode;
  /** Native engine: the ggml CUDA backend library to try (default: the ones found, gpu-offload.ts). */
  gpuBackend?: string | undefined;
  /**
   * Shared by the engines of one server (several models): a probe that found no GPU at all (no CUDA library, or
   * none that sees a device, under `auto`) is not run again for the next model's load, since that does not change
   * while the process lives. Keyed by `--gpu-layers` and `--gpu-backend`.
   */
  cpuMachineMemo?: Map<string, GpuOffloadChoice>;
  /** 0 = planned from `cores` (thread-plan.ts). */
  threads: number;
  cores: number;
  contextSize: number;
  batchSize: number;
  /** Native engine tuning, as the config resolved it (passed to the workers as it is). */
  native: NativeTuning;
  /** Native engine: which ggml CPU kernels (cpu-kernels.ts); default `prebuilt`. */
  cpuKernels?: CpuKernelsMode;
  /** Server cap on completion tokens, and the default. */
  maxTokens: number;
  /** Requests allowed to wait for a slot. */
  queueLimit: number;
  showPullProgress: boolean;
  /** A pull that receives no byte for this long fails (state `failed`). */
  pullStallTimeoutMs: number;
  /** Native engine: opens the event relay its workers' loops send tokens to (absent: every event crosses the task port). */
  openRelay?: RelayOpener;
  /** How long dispose() waits for the workers to stop before it terminates them (default WORKER_STOP_TIMEOUT_MS). */
  workerStopTimeoutMs?: number;
}
