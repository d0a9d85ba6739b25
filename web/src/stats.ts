import type { StatsView } from '../../src/inference/stats-view-types.ts';

/**
 * GET /api/v1/stats (docs/management-api.md "Live figures"), its types imported from the service (type-only): the
 * model's state, the requests running and waiting, the last window's figures and 10-second buckets of the last 5
 * minutes.
 */
export type { Percentiles, StatsBucket, StatsView } from '../../src/inference/stats-view-types.ts';

/**
 * The model the Overview shows: the stats' model, or one read from GET /health while the stats cannot be read (which
 * may not know the workers or a pull's total size).
 */
export interface StatsModel extends Omit<StatsView['model'], 'workers' | 'pull'> {
  workers: StatsView['model']['workers'] | null;
  pull: { downloadedBytes: number; totalBytes: number | null; percent: number } | null;
}

/** One queue sample per poll (the series has no queue depth). */
export interface QueueSample {
  running: number;
  waiting: number;
}

/** A fixed-size window of samples, oldest first. */
export function pushSample<T>(window: readonly T[], sample: T, capacity: number): T[] {
  const next = [...window, sample];
  return next.length > capacity ? next.slice(next.length - capacity) : next;
}
