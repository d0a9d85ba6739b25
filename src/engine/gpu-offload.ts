import { runProbeChild } from './probe-child.ts';
import type { GpuProbeAnswer, GpuProbeRequest } from './worker-protocol.ts';

/**
 * Where the native loop computes (`--gpu-layers auto|N`), decided once on the main thread before the model
 * workers start (the GPU backend, like the CPU one, is process-wide):
 * - `0`: the CPU, nothing probed;
 * - `auto` (default) or N > 0: with a ggml CUDA backend library at hand (`--gpu-backend`, else
 *   native/build/cuda/ from `npm run build:cuda`, else node-llama-cpp's prebuilt CUDA package), a child
 *   process loads it, offloads the model (every layer for auto, else N) and decodes a few tokens. Only a probe
 *   that answers puts the workers on the GPU: a backend that cannot load (no driver, no CUDA runtime, a
 *   library for another architecture) or a GPU that aborts on its first kernel (PTX the driver cannot
 *   compile) costs one child process, never the server. The first candidate that passes is used.
 * The answer is a warning when a GPU was asked for by number or a backend loaded but failed; a machine with no
 * CUDA library or no device under `auto` is simply a CPU machine.
 */
export type GpuLayersMode = 'auto' | number;

export interface GpuOffloadChoice {
  /** The backend library the workers load (null: CPU). */
  library: string | null;
  /** Layers to offload: -1 = all, 0 = CPU. */
  layers: number;
  /** Why, in words (logged). */
  why: string;
  /** A GPU was expected and is not used: logged as a warning. */
  warn: boolean;
  /** The backend libraries' own errors when no GPU was found under `auto` (logged at debug only). */
  detail?: string;
  /** What the probe reported (GPU only). */
  probe?: Extract<GpuProbeAnswer, { ok: true }>;
}

export interface GpuOffloadInput {
  mode: GpuLayersMode;
  modelPath: string;
  /** --gpu-backend: this library only. */
  backend?: string | undefined;
  signal?: AbortSignal;
}

export type GpuProbe = (req: GpuProbeRequest, signal?: AbortSignal) => Promise<GpuProbeAnswer>;

const PROBE_TIMEOUT_MS = 180_000;

export async function chooseGpuOffload(
  input: GpuOffloadInput,
  probe: GpuProbe = probeGpuInChild,
): Promise<GpuOffloadChoice> {
  if (input.mode === 0) return { library: null, layers: 0, why: '--gpu-layers 0', warn: false };
  const layers = input.mode === 'auto' ? -1 : input.mode;
  const listed = await probe({ action: 'list', ...(input.backend ? { explicit: input.backend } : {}) }, input.signal);
  const libraries = 'libraries' in listed ? listed.libraries : [];
  if (libraries.length === 0) {
    const why = input.backend
      ? `the GPU backend ${input.backend} does not exist`
      : 'no CUDA backend library (npm run build:cuda builds one for this GPU)';
    return { library: null, layers: 0, why, warn: input.mode !== 'auto' || input.backend !== undefined };
  }
  const failures: string[] = [];
  let sawDevice = false;
  for (const library of libraries) {
    input.signal?.throwIfAborted();
    try {
      const a = await probe({ action: 'run', library, modelPath: input.modelPath, layers }, input.signal);
      if ('libraries' in a) throw new Error('the probe answered something else');
      if (a.ok)
        return { library, layers, why: `${library} runs the model on ${a.device.description}`, warn: false, probe: a };
      sawDevice ||= a.sawDevice;
      failures.push(`${library}: ${a.reason}`);
    } catch (err) {
      input.signal?.throwIfAborted();
      sawDevice = true; // a probe that died got past loading: the library and a device were there
      failures.push(`${library}: ${err instanceof Error ? err.message : String(err)}`);
    }
  }
  const warn = input.mode !== 'auto' || input.backend !== undefined || sawDevice;
  // A CPU-only host under `auto` is no problem: one plain line; the loader's errors (libcublas ...) only at debug.
  if (!warn)
    return { library: null, layers: 0, why: 'no GPU found: computing on the cpu', warn, detail: failures.join('; ') };
  return { library: null, layers: 0, why: `no usable GPU: ${failures.join('; ')}`, warn };
}

/** The probe's entry: a plain-JS shim that registers tsx in the child (as the model workers' entry does). */
const PROBE_ENTRY = new URL('../worker/gpu-probe-entry.mjs', import.meta.url);

/** Runs worker/gpu-probe.ts in a child process; killed by `signal` or after PROBE_TIMEOUT_MS. A crash is a failed probe. */
export function probeGpuInChild(req: GpuProbeRequest, signal?: AbortSignal): Promise<GpuProbeAnswer> {
  return runProbeChild(PROBE_ENTRY, 'GPU probe', req, PROBE_TIMEOUT_MS, signal);
}
