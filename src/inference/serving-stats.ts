import type { ChatEngine, GenerationSink } from '../engine/generation.ts';
import type { Percentiles, StatsBucket, StatsView } from './stats-view-types.ts';

/** Figures of one finished shared-endpoint generation. */
interface RequestFigures {
  /** When it finished, ms since epoch. */
  at: number;
  /** Admission to first text, ms; null when no text came. */
  ttftMs: number | null;
  promptTokens: number;
  completionTokens: number;
  ok: boolean;
}

const WINDOW_MS = 60_000;
const SERIES_BUCKET_MS = 10_000;
const SERIES_MS = 5 * 60_000;
/** Figures kept at most (the oldest go first); bounds memory under any load. */
const MAX_FIGURES = 20_000;

const round1 = (v: number) => Math.round(v * 10) / 10;

/** Nearest-rank percentile of an ascending array; null when empty. */
function percentile(sorted: number[], p: number): number | null {
  if (sorted.length === 0) return null;
  return round1(sorted[Math.min(sorted.length - 1, Math.max(0, Math.ceil((p / 100) * sorted.length) - 1))]!);
}

function percentiles(figures: RequestFigures[]): Percentiles {
  const ttfts = figures.flatMap((f) => (f.ttftMs === null ? [] : [f.ttftMs])).sort((a, b) => a - b);
  return { p50: percentile(ttfts, 50), p95: percentile(ttfts, 95) };
}

/**
 * Recent serving figures of the shared model for the dashboard's live charts: a bounded ring of finished
 * generations (the last 5 minutes), summarized on demand. The gateway wraps each generation's sink with
 * `observe`; a generation cancelled by its client records nothing. Main thread only.
 */
export class ServingStats {
  private figures: RequestFigures[] = [];
  private head = 0;

  constructor(private readonly engine: Pick<ChatEngine, 'modelId' | 'status' | 'load'>) {}

  /** Wraps a generation's sink to record its time to first text, tokens and outcome. */
  observe(sink: GenerationSink, startedAt = performance.now()): GenerationSink {
    let ttftMs: number | null = null;
    return {
      onText: (text, logprobs) => {
        ttftMs ??= performance.now() - startedAt;
        sink.onText(text, logprobs);
      },
      onDone: (r) => {
        this.record({
          at: Date.now(),
          ttftMs,
          promptTokens: r.promptTokens,
          completionTokens: r.completionTokens,
          ok: true,
        });
        sink.onDone(r);
      },
      onError: (e) => {
        this.record({ at: Date.now(), ttftMs, promptTokens: 0, completionTokens: 0, ok: false });
        sink.onError(e);
      },
    };
  }

  snapshot(now = Date.now()): StatsView {
    this.prune(now);
    const recent = this.figures.slice(this.head);
    const inWindow = recent.filter((f) => f.at > now - WINDOW_MS);
    const completionTokens = inWindow.reduce((s, f) => s + f.completionTokens, 0);
    const firstBucket = Math.floor((now - SERIES_MS) / SERIES_BUCKET_MS) + 1;
    const buckets: RequestFigures[][] = Array.from(
      { length: Math.floor(now / SERIES_BUCKET_MS) - firstBucket + 1 },
      () => [],
    );
    for (const f of recent) buckets[Math.floor(f.at / SERIES_BUCKET_MS) - firstBucket]?.push(f); // one pass
    const series = buckets.map((inBucket, i): StatsBucket => {
      const tokens = inBucket.reduce((sum, f) => sum + f.completionTokens, 0);
      return {
        t: new Date((firstBucket + i) * SERIES_BUCKET_MS).toISOString(),
        requests: inBucket.length,
        completionTokens: tokens,
        tokensPerSecond: round1(tokens / (SERIES_BUCKET_MS / 1000)),
        ttftMs: percentiles(inBucket),
      };
    });
    const s = this.engine.status();
    return {
      at: new Date(now).toISOString(),
      model: {
        id: this.engine.modelId,
        state: s.state,
        engine: s.engine,
        workers: { ready: s.workersReady, total: s.workers },
        pull: s.pull && {
          downloadedBytes: s.pull.downloadedBytes,
          totalBytes: s.pull.totalBytes,
          percent: round1(s.pull.ratio * 100),
        },
        error: s.error,
      },
      requests: this.engine.load(),
      window: {
        seconds: WINDOW_MS / 1000,
        requests: inWindow.length,
        errors: inWindow.filter((f) => !f.ok).length,
        promptTokens: inWindow.reduce((sum, f) => sum + f.promptTokens, 0),
        completionTokens,
        tokensPerSecond: round1(completionTokens / (WINDOW_MS / 1000)),
        ttftMs: percentiles(inWindow),
      },
      series,
    };
  }

  private record(f: RequestFigures): void {
    this.figures.push(f);
    if (this.figures.length - this.head > MAX_FIGURES) this.head++;
    if (this.head > 4096) this.prune(Date.now());
  }

  /** Drops figures older than the series span (and those past the cap), compacting the array. */
  private prune(now: number): void {
    let h = this.head;
    while (h < this.figures.length && this.figures[h]!.at <= now - SERIES_MS) h++;
    this.figures = this.figures.slice(h);
    this.head = 0;
  }
}
