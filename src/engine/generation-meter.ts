import type { Metrics } from '../metrics/metrics.ts';
import type { Priority } from '../protocol/priority.ts';

/**
 * One generation's request metrics, from its admission (construction) to its end: queue time, time to first token,
 * inter-token latency, prompt / prefix-cache / generated tokens and the outcome. A count-only request (count_tokens)
 * records no outcome. Main thread; one per generation.
 */
export class GenerationMeter {
  private readonly admittedAt = performance.now();
  private firstTokenAt = 0;
  private lastTextAt = 0;
  private readonly byPriority: { model: string; priority: Priority };

  constructor(
    private readonly m: Metrics,
    private readonly labels: { model: string },
    priority: Priority,
    private readonly countOnly: boolean,
  ) {
    this.byPriority = { ...labels, priority };
  }

  /** Its first event: it left the queue. */
  started(): void {
    this.m.queueTime.observe(this.labels, (performance.now() - this.admittedAt) / 1000);
  }

  prompt(promptTokens: number, cachedTokens: number): void {
    this.m.promptTokens.inc(this.labels, promptTokens);
    this.m.prefixCacheQueries.inc(this.labels, promptTokens);
    this.m.prefixCacheHits.inc(this.labels, cachedTokens); // also when 0: the hit-rate series exists from the first request
  }

  /** `n` tokens delivered together now. */
  text(n: number): void {
    const m = this.m;
    const now = performance.now();
    m.generatedTokensByPriority.inc(this.byPriority, n);
    if (this.firstTokenAt === 0) {
      this.firstTokenAt = now;
      m.timeToFirstToken.observe(this.labels, (now - this.admittedAt) / 1000);
      // Tokens delivered together with the first one reached the client with it: a gap of 0 each (as the
      // later deliveries' gap is spread over their tokens), so every token after the first is observed once.
      for (let i = 1; i < n; i++) m.interTokenLatency.observe(this.labels, 0);
    } else if (n > 0) {
      const gap = (now - this.lastTextAt) / 1000 / n;
      for (let i = 0; i < n; i++) m.interTokenLatency.observe(this.labels, gap);
    }
    this.lastTextAt = now;
  }

  /** The worker's 'done': completion tokens, end-to-end latency and the finish reason. */
  done(completionTokens: number, finishReason: string): void {
    if (this.countOnly) return;
    this.m.generationTokens.inc(this.labels, completionTokens);
    this.m.e2eLatency.observe(this.labels, (performance.now() - this.admittedAt) / 1000);
    this.m.requestSuccess.inc({ ...this.labels, finished_reason: finishReason });
  }

  /** Cancelled by its client while still queued (no worker saw it). */
  cancelledWhileQueued(): void {
    if (!this.countOnly) this.m.requestSuccess.inc({ ...this.labels, finished_reason: 'cancelled' });
  }
}
