/**
 * The native loop's KV cell use, reported to the main thread (WorkerStatus 'kv-cache' -> hearth_kv_cache_usage_ratio)
 * while this worker runs jobs: once when a job starts and ends, and every `periodMs` between (the cells grow with
 * every generated token; the Gateway API Inference Extension reads the gauge to pick replicas). Nothing is posted
 * while the worker is idle, and only values that changed are posted.
 */
export interface KvUse {
  /** KV cells the running jobs' sequences hold. */
  used: number;
  /** KV cells of the whole context. */
  total: number;
}

export class KvUseReporter {
  private running = 0;
  private timer: NodeJS.Timeout | undefined;
  private last: KvUse = { used: -1, total: -1 };

  constructor(
    private readonly read: () => KvUse,
    private readonly post: (use: KvUse) => void,
    private readonly periodMs = 250,
  ) {}

  /** Reports the current figure (e.g. once the model is loaded: nothing used). */
  sample(): void {
    const now = this.read();
    if (now.used === this.last.used && now.total === this.last.total) return;
    this.last = now;
    this.post(now);
  }

  jobStarted(): void {
    if (this.running++ === 0) {
      this.timer = setInterval(() => this.sample(), this.periodMs);
      this.timer.unref();
    }
    this.sample();
  }

  jobEnded(): void {
    if (this.running > 0 && --this.running === 0) {
      clearInterval(this.timer);
      this.timer = undefined;
    }
    this.sample();
  }
}
