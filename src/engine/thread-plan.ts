/**
 * How many compute threads each model worker gets when `--threads 0` (the default).
 *
 * The native loop runs decode on its own thread, which is also ggml's thread 0; the JavaScript event loop
 * sleeps while a step computes and wakes once per step to forward text, so it needs a sliver of a core,
 * not a whole one. node-llama-cpp's engine instead drives every token from the worker's JS thread, which
 * then competes with ggml's threads; there a core is left free for JS.
 * Measurements behind these numbers: docs/engine.md "Threads".
 */
export interface ThreadPlanInput {
  cores: number;
  workers: number;
  engine: 'native' | 'node-llama-cpp' | 'instant' | 'auto';
  /** 0 = choose. */
  requested: number;
}

/**
 * With `--threads 0` on the native engine, planThreads() is only the most threads tried: the loop times
 * one decode step (a row per slot) with 1..that many threads at load and keeps the count whose step,
 * plus the JavaScript work of a step where no core is left for it, is fastest (native/src/compute_threads.h;
 * logged with "model ready" as `calibration`). Returns the cores to calibrate for, 0 for no calibration.
 */
export function calibrationCores(i: ThreadPlanInput): number {
  if (i.requested > 0 || (i.engine !== 'native' && i.engine !== 'auto')) return 0;
  return planThreads(i) > 1 ? Math.max(1, Math.floor(i.cores / i.workers)) : 0;
}

export function planThreads(i: ThreadPlanInput): number {
  if (i.requested > 0) return i.requested;
  if (i.engine === 'instant') return 1;
  const perWorker = i.cores / i.workers;
  if (i.engine === 'node-llama-cpp')
    return Math.max(1, Math.floor(perWorker) - (i.cores > 1 && i.workers === 1 ? 1 : 0));
  return Math.max(1, Math.floor(perWorker));
}
