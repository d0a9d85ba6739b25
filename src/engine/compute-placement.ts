import path from 'node:path';
import type { Logger } from '../log/logger.ts';
import { chooseCpuKernels, type CpuKernelsChoice, type CpuKernelsMode } from './cpu-kernels.ts';
import { chooseGpuOffload, type GpuLayersMode, type GpuOffloadChoice } from './gpu-offload.ts';
import type { ModelWorkerData } from './worker-protocol.ts';

/** Sequences per worker when --slots is not given: on the CPU, and on a GPU (which batches 64 rows about as fast as 8). */
export const DEFAULT_SLOTS = 8;
export const DEFAULT_GPU_SLOTS = 64;

/**
 * Slots per worker on a GPU when --slots is not given: DEFAULT_GPU_SLOTS, fewer when their KV cache (contextSize
 * tokens each, f16) would not fit in 80 % of the memory the GPU had free with the model loaded (the probe's
 * reading), less 1 GiB for compute buffers, shared by the workers. At least 1.
 */
export function gpuSlots(
  freeBytes: number,
  contextSize: number,
  kvBytesPerToken: number | null,
  workers: number,
): number {
  if (kvBytesPerToken === null || !(freeBytes > 0)) return DEFAULT_GPU_SLOTS;
  const budget = freeBytes * 0.8 - 2 ** 30;
  return Math.max(1, Math.min(DEFAULT_GPU_SLOTS, Math.floor(budget / workers / (contextSize * kvBytesPerToken))));
}

/** What placement needs of the engine's options (LocalEngineOptions). */
export interface PlacementOptions {
  engine: ModelWorkerData['engine'];
  modelsDir: string;
  cores: number;
  gpuLayers?: GpuLayersMode | undefined;
  gpuBackend?: string | undefined;
  /** Shared by the engines of one server: a CPU-only answer of the GPU probe, by `--gpu-layers|--gpu-backend`. */
  cpuMachineMemo?: Map<string, GpuOffloadChoice> | undefined;
  cpuKernels?: CpuKernelsMode | undefined;
}

/**
 * Native engines: where the workers compute (logged as "gpu offload"; a warning when a GPU was expected); null for
 * the others. A probe that found no GPU at all is remembered in `cpuMachineMemo` for the next model's load.
 */
export async function placeOnGpu(
  o: PlacementOptions,
  modelId: string,
  modelPath: string,
  log: Logger,
  signal: AbortSignal,
): Promise<GpuOffloadChoice | null> {
  if (o.engine !== 'native' && o.engine !== 'auto') return null;
  const mode = o.gpuLayers ?? 0;
  const memoKey = `${mode}|${o.gpuBackend ?? ''}`;
  const known = o.cpuMachineMemo?.get(memoKey);
  if (mode !== 0 && !known) log.info('probing gpu', { model: modelId });
  const choice = known ?? (await chooseGpuOffload({ mode, modelPath, backend: o.gpuBackend, signal }));
  if (!known && mode !== 0 && choice.library === null && !choice.warn) o.cpuMachineMemo?.set(memoKey, choice);
  const fields = {
    model: modelId,
    gpuLayers: choice.layers,
    why: choice.why,
    ...(choice.probe
      ? {
          device: choice.probe.device.description,
          offloaded: `${choice.probe.gpuLayers}/${choice.probe.modelLayers + 1}`,
          probeMs: Math.round(choice.probe.decodeMs),
        }
      : {}),
  };
  if (choice.warn) log.warn('gpu unusable: computing on the cpu', fields);
  else log.info('gpu offload', fields);
  if (choice.detail) log.debug('gpu probe detail', { model: modelId, detail: choice.detail });
  return choice;
}

/** Native engines: the ggml CPU kernels the workers load (logged as "cpu kernels"); null for the others. */
export async function chooseKernels(
  o: PlacementOptions,
  modelId: string,
  modelPath: string,
  shape: { slots: number; threads: number },
  log: Logger,
  signal: AbortSignal,
): Promise<CpuKernelsChoice | null> {
  if (o.engine !== 'native' && o.engine !== 'auto') return null;
  const mode = o.cpuKernels ?? 'prebuilt';
  if (mode === 'auto') log.info('timing cpu kernels', { model: modelId });
  const choice = await chooseCpuKernels({
    mode,
    modelPath,
    slots: shape.slots,
    threads: shape.threads,
    cores: o.cores,
    cacheFile: path.join(o.modelsDir, 'cpu-kernels.json'),
    signal,
  });
  log.info('cpu kernels', {
    model: modelId,
    kernels: choice.kernels,
    why: choice.why,
    ...(choice.msPerStep ? { msPerStep: choice.msPerStep, cached: choice.cached } : {}),
  });
  return choice;
}
