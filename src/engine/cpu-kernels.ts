import { createHash } from 'node:crypto';
import { mkdirSync, readFileSync, renameSync, statSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { runProbeChild } from './probe-child.ts';
import type { CpuKernelProbeAnswer, CpuKernelProbeRequest, CpuKernelsKind, CpuKernelsMode } from './worker-protocol.ts';

/**
 * Which ggml CPU kernels the native engine loads (`--cpu-kernels`), decided once on the main thread before
 * the model workers start (the CPU backend is process-wide):
 * - `prebuilt`: node-llama-cpp's library for this CPU family (ggml picks it: haswell, zen4, icelake...);
 * - `prebuilt:VARIANT`: that one of node-llama-cpp's libraries (libggml-cpu-VARIANT.so), whatever this CPU could run
 *   faster: another CPU family's arithmetic on this machine (npm run test:cpu-variants runs the numeric tests so);
 * - `native`: native/build/cpu-kernels/, ggml's CPU backend compiled for this very CPU by `npm run build:native`;
 * - `auto` (default): when the native build is usable, time both on the served model in child processes,
 *   in the order prebuilt, native, native, prebuilt (so a drifting machine moves both alike), and load the
 *   native kernels only when their median decode step (one row per slot) is at least 3 % shorter. The answer is
 *   cached per model file, slots, threads and both libraries, so later starts do not time again.
 * Neither is better everywhere: measured on an AMD EPYC (Zen 3, AVX2), 8 rows, 2 threads, the native build took
 * 71-72 ms a step on a 0.5B Q4_K_M against 81 ms, but 64-65 ms on its Q8_0 against 60.
 */
export type { CpuKernelsMode };

export interface CpuKernelsChoice {
  kernels: CpuKernelsKind;
  /** Why, in words (logged). */
  why: string;
  /** auto: the mean ms of a decode step with one row per slot, per candidate. */
  msPerStep?: { prebuilt: number; native: number };
  /** auto: the answer came from the cache. */
  cached?: boolean;
}

export interface CpuKernelsInput {
  mode: CpuKernelsMode;
  modelPath: string;
  slots: number;
  /** Compute threads the workers plan to use (a candidate's time is its best at up to this many). */
  threads: number;
  cores: number;
  /** JSON file of earlier answers (absent: no cache). */
  cacheFile?: string;
  signal?: AbortSignal;
}

/** Runs one probe request (in a child process by default). */
export type KernelProbe = (req: CpuKernelProbeRequest, signal?: AbortSignal) => Promise<CpuKernelProbeAnswer>;

/** Native must be at least this much faster to be chosen: below it the difference is the machine's noise. */
const NATIVE_MARGIN = 0.97;
const PROBE_TIMEOUT_MS = 180_000;
const CACHE_ENTRIES = 64;

export class CpuKernelsUnavailable extends Error {}

export async function chooseCpuKernels(
  input: CpuKernelsInput,
  probe: KernelProbe = probeInChild,
): Promise<CpuKernelsChoice> {
  if (input.mode === 'prebuilt' || input.mode.startsWith('prebuilt:'))
    return { kernels: input.mode as CpuKernelsKind, why: `--cpu-kernels ${input.mode}` };
  const described = await probe({ action: 'describe' }, input.signal);
  const native = described.action === 'describe' ? described.native : { reason: 'the probe answered something else' };
  if ('reason' in native) {
    if (input.mode === 'native')
      throw new CpuKernelsUnavailable(`--cpu-kernels native: the native CPU kernels are ${native.reason}`);
    return { kernels: 'prebuilt', why: `the native CPU kernels are ${native.reason}` };
  }
  if (input.mode === 'native') return { kernels: 'native', why: '--cpu-kernels native' };

  const key = cacheKey(input, native.stamp);
  const cached = key && input.cacheFile ? readCache(input.cacheFile)[key] : undefined;
  if (cached) return decide(cached, true);

  const times = { prebuilt: [] as number[], native: [] as number[] };
  for (const kernels of ['prebuilt', 'native', 'native', 'prebuilt'] as const) {
    input.signal?.throwIfAborted();
    try {
      times[kernels].push(
        stepMs(
          await probe(
            {
              action: 'time',
              kernels,
              modelPath: input.modelPath,
              slots: input.slots,
              threads: input.threads,
              cores: input.cores,
            },
            input.signal,
          ),
          input.threads,
        ),
      );
    } catch (err) {
      input.signal?.throwIfAborted();
      // A candidate that cannot run is no candidate; the prebuilt kernels are what Hearth always had.
      return {
        kernels: 'prebuilt',
        why: `timing the ${kernels} CPU kernels failed: ${err instanceof Error ? err.message : String(err)}`,
      };
    }
  }
  const msPerStep = { prebuilt: mean(times.prebuilt), native: mean(times.native) };
  if (key && input.cacheFile) writeCache(input.cacheFile, key, msPerStep);
  return decide(msPerStep, false);
}

/** A candidate's time: its best step at up to the planned thread count. */
function stepMs(a: CpuKernelProbeAnswer, threads: number): number {
  if (a.action !== 'time') throw new Error('the probe answered something else');
  const usable = a.timings.filter(
    (t) => t.threads <= Math.max(1, threads) && Number.isFinite(t.msPerStep) && t.msPerStep > 0,
  );
  if (usable.length === 0) throw new Error('the probe measured no step');
  return Math.min(...usable.map((t) => t.msPerStep));
}

function decide(msPerStep: { prebuilt: number; native: number }, cached: boolean): CpuKernelsChoice {
  const faster = msPerStep.native <= msPerStep.prebuilt * NATIVE_MARGIN;
  const ratio = (msPerStep.native / msPerStep.prebuilt).toFixed(3);
  return {
    kernels: faster ? 'native' : 'prebuilt',
    why: `auto: a decode step with the native kernels takes ${ratio} x the prebuilt one's (native when <= ${NATIVE_MARGIN})`,
    msPerStep,
    cached,
  };
}

function mean(xs: number[]): number {
  return xs.reduce((a, b) => a + b, 0) / xs.length;
}

/**
 * What the answer depends on: the model file, the batch shape, the native build (a new node-llama-cpp makes the
 * native build unusable until it is rebuilt, which changes its stamp). Null when the model cannot be read.
 */
function cacheKey(input: CpuKernelsInput, nativeStamp: string): string | null {
  try {
    const model = statSync(input.modelPath);
    const parts = [
      path.resolve(input.modelPath),
      model.size,
      Math.round(model.mtimeMs),
      input.slots,
      input.threads,
      input.cores,
      nativeStamp,
    ];
    return createHash('sha256').update(JSON.stringify(parts)).digest('hex').slice(0, 32);
  } catch {
    return null;
  }
}

type Cache = Record<string, { prebuilt: number; native: number }>;

function readCache(file: string): Cache {
  try {
    const value = JSON.parse(readFileSync(file, 'utf8')) as unknown;
    if (typeof value !== 'object' || value === null || Array.isArray(value)) return {};
    const out: Cache = {};
    for (const [k, v] of Object.entries(value as Record<string, unknown>)) {
      const e = v as { prebuilt?: unknown; native?: unknown } | null;
      if (typeof e?.prebuilt === 'number' && typeof e.native === 'number' && e.prebuilt > 0 && e.native > 0)
        out[k] = { prebuilt: e.prebuilt, native: e.native };
    }
    return out;
  } catch {
    return {};
  }
}

/** Keeps the newest CACHE_ENTRIES answers; written to a temporary file and renamed (never half a file). */
function writeCache(file: string, key: string, msPerStep: { prebuilt: number; native: number }): void {
  try {
    const cache = readCache(file);
    delete cache[key];
    const entries = [...Object.entries(cache), [key, msPerStep] as const].slice(-CACHE_ENTRIES);
    mkdirSync(path.dirname(file), { recursive: true });
    const tmp = `${file}.${process.pid}.tmp`;
    writeFileSync(tmp, `${JSON.stringify(Object.fromEntries(entries), null, 1)}\n`);
    renameSync(tmp, file);
  } catch {
    // A cache that cannot be written only means timing again at the next start.
  }
}

/** The probe's entry: a plain-JS shim that registers tsx in the child (as the model workers' entry does). */
const PROBE_ENTRY = new URL('../worker/cpu-kernel-probe-entry.mjs', import.meta.url);

/** Runs worker/cpu-kernel-probe.ts in a child process; killed by `signal` or after PROBE_TIMEOUT_MS. */
export function probeInChild(req: CpuKernelProbeRequest, signal?: AbortSignal): Promise<CpuKernelProbeAnswer> {
  return runProbeChild(PROBE_ENTRY, 'probe', req, PROBE_TIMEOUT_MS, signal);
}
