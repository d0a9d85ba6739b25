import { serveProbe } from './probe-main.ts';
import { fileStamp, nativeCpuKernels } from '../../native/paths.ts';
import type { CpuKernelProbeAnswer, CpuKernelProbeRequest } from '../engine/worker-protocol.ts';
import { cpuKernelsDir } from './cpu-kernels-dir.ts';
import { loadNativeSlotEngineInternal } from './native-slot-engine.ts';

/**
 * The CPU kernel probe, a child process of engine/cpu-kernels.ts (entry: cpu-kernel-probe-entry.mjs): the CPU
 * backend is process-wide, so each timed candidate gets a process of its own. Protocol: CpuKernelProbeRequest
 * in argv[2], one CpuKernelProbeAnswer line on stdout, exit code 0; or exit code 1 with the reason on stderr.
 * The timing is the native loop's load-time thread calibration (native/src/compute_threads.cpp): after a warm-up,
 * the median of 12 to 48 decode steps of one row per slot, for 1..threads compute threads.
 */
async function answer(req: CpuKernelProbeRequest): Promise<CpuKernelProbeAnswer> {
  if (req.action === 'describe') {
    const native = nativeCpuKernels();
    return {
      action: 'describe',
      native: 'reason' in native ? { reason: native.reason } : { stamp: fileStamp(native.library) },
    };
  }
  const backendDir = cpuKernelsDir(req.kernels);
  const engine = await loadNativeSlotEngineInternal({
    modelPath: req.modelPath,
    contextSize: 64,
    slots: req.slots,
    // The calibration starts at 1 thread and needs 2 or more to run at all; the caller keeps counts <= its plan.
    threads: Math.max(2, req.threads),
    batchSize: Math.max(16, req.slots),
    promptCacheMiB: 0,
    calibrateCores: Math.max(1, req.cores),
    ...(backendDir ? { backendDir } : {}),
  });
  const timings = (engine.loaded.calibration ?? []).map((t) => ({ threads: t.threads, msPerStep: t.msPerStep }));
  await engine.dispose();
  if (engine.loaded.embeddingsOnly) throw new Error('an embeddings-only model (an encoder) has no decode step to time');
  return { action: 'time', cpuBackend: engine.loaded.cpuBackend, timings };
}

serveProbe(answer);
