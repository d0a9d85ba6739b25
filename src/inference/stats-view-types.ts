/**
 * The body of GET /api/v1/stats (docs/management-api.md "Live figures"), free of any import: the API and the
 * dashboard (web/, type-only) share it. A percentile with no request is null.
 */

export interface Percentiles {
  p50: number | null;
  p95: number | null;
}

export interface StatsBucket {
  t: string;
  requests: number;
  completionTokens: number;
  tokensPerSecond: number;
  ttftMs: Percentiles;
}

export interface StatsView {
  at: string;
  model: {
    id: string;
    state: string;
    engine: string | null;
    workers: { ready: number; total: number };
    pull: { downloadedBytes: number; totalBytes: number; percent: number } | null;
    error: string | null;
  };
  requests: { running: number; waiting: number };
  window: {
    seconds: number;
    requests: number;
    errors: number;
    promptTokens: number;
    completionTokens: number;
    tokensPerSecond: number;
    ttftMs: Percentiles;
  };
  series: StatsBucket[];
}
