/**
 * GET /api/v1/stats (docs/management-api.md "Live figures"): the model's state, the requests running and waiting, the
 * last window's figures and 10-second buckets of the last 5 minutes. A percentile with no request is null.
 */
export interface Percentiles {
  p50: number | null;
  p95: number | null;
}

export interface StatsModel {
  id: string;
  state: string;
  engine: string | null;
  workers: { ready: number; total: number } | null;
  pull: { downloadedBytes: number; totalBytes: number | null; percent: number } | null;
  error: string | null;
}

export interface StatsBucket {
  t: string;
  requests: number;
  completionTokens: number;
  tokensPerSecond: number | null;
  ttftMs: Percentiles;
}

export interface StatsView {
  at: string;
  model: StatsModel;
  requests: { running: number; waiting: number };
  window: {
    seconds: number;
    requests: number;
    errors: number;
    promptTokens: number;
    completionTokens: number;
    tokensPerSecond: number | null;
    ttftMs: Percentiles;
  };
  series: StatsBucket[];
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
