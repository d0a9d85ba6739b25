/** A model's recent figures for the Models page: requests and completion tokens finished, and tokens per second over the last minute. */
export interface UsageView {
  requests: number;
  completionTokens: number;
  tokensPerSecond: number;
}

const WINDOW_MS = 60_000;
/** Finished generations kept for the window at most (the oldest go first): bounds memory under any load. */
const MAX_KEPT = 10_000;

/** Counts of one model's finished generations since start, and a one-minute window of them. */
export class ModelUsage {
  private requests = 0;
  private tokens = 0;
  private readonly recent: Array<{ at: number; tokens: number }> = [];

  record(completionTokens: number, at = Date.now()): void {
    this.requests++;
    this.tokens += completionTokens;
    this.recent.push({ at, tokens: completionTokens });
    if (this.recent.length > MAX_KEPT) this.recent.splice(0, this.recent.length - MAX_KEPT);
  }

  view(now = Date.now()): UsageView {
    while (this.recent.length > 0 && this.recent[0]!.at < now - WINDOW_MS) this.recent.shift();
    const windowTokens = this.recent.reduce((sum, r) => sum + r.tokens, 0);
    return {
      requests: this.requests,
      completionTokens: this.tokens,
      tokensPerSecond: Math.round((windowTokens / (WINDOW_MS / 1000)) * 10) / 10,
    };
  }
}
