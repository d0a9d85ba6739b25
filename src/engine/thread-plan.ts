/**
 * How many compute threads each model worker gets when `--threads 0` (the default).
 *
 * The native loop runs decode on its own thread, which is also ggml's thread 0; the JavaScript event loop
 * sleeps while a step computes and wakes once per step to forward text, so it needs a sliver of a core,
 * not a whole one. node-llama-cpp's engine instead drives every token from the worker's JS thread, which
 * then competes with ggml's threads; there a core is left free for JS.
 * Measurements behind these numbers: README "Threads".
 */
export interface ThreadPlanInput {
  cores: number;
  workers: number;
  engine: 'native' | 'node-llama-cpp' | 'instant' | 'auto';
  /** 0 = choose. */
  requested: number;
}

export function planThreads(i: ThreadPlanInput): number {
  if (i.requested > 0) return i.requested;
  if (i.engine === 'instant') return 1;
  const perWorker = i.cores / i.workers;
  if (i.engine === 'node-llama-cpp') return Math.max(1, Math.floor(perWorker) - (i.cores > 1 && i.workers === 1 ? 1 : 0));
  return Math.max(1, Math.floor(perWorker));
}
