/**
 * A sliding-window counter made of fixed buckets: `buckets` slots of `bucketMs` each, so a count added at
 * time t leaves the window at the end of its bucket plus the window length (precision: one bucket). Memory is
 * constant whatever the rate. Time is passed in (ms since epoch), so tests need no clock. Main thread only.
 */
export class WindowCounter {
  private readonly counts: Float64Array;
  /** Absolute bucket number (floor(t / bucketMs)) each slot holds, or -1 when never used. */
  private readonly stamps: Float64Array;

  constructor(
    private readonly bucketMs: number,
    private readonly buckets: number,
  ) {
    this.counts = new Float64Array(buckets);
    this.stamps = new Float64Array(buckets).fill(-1);
  }

  get windowMs(): number {
    return this.bucketMs * this.buckets;
  }

  add(amount: number, now: number): void {
    const b = Math.floor(now / this.bucketMs);
    const slot = b % this.buckets;
    if (this.stamps[slot] !== b) {
      this.stamps[slot] = b;
      this.counts[slot] = 0;
    }
    this.counts[slot]! += amount;
  }

  total(now: number): number {
    let sum = 0;
    this.live(now, (_, count) => {
      sum += count;
    });
    return sum;
  }

  /** Ms until the window holds nothing (0 when empty now). */
  msUntilEmpty(now: number): number {
    let last = -1;
    this.live(now, (b) => {
      last = Math.max(last, b);
    });
    return last < 0 ? 0 : this.leavesAt(last) - now;
  }

  /** Ms until one more unit fits under `limit` (0 when it fits now). */
  msUntilRoom(limit: number, now: number): number {
    const live: Array<[number, number]> = [];
    let sum = 0;
    this.live(now, (b, count) => {
      live.push([b, count]);
      sum += count;
    });
    if (sum + 1 <= limit) return 0;
    live.sort((x, y) => x[0] - y[0]);
    for (const [b, count] of live) {
      sum -= count;
      if (sum + 1 <= limit) return this.leavesAt(b) - now;
    }
    return this.windowMs;
  }

  private leavesAt(bucket: number): number {
    return (bucket + this.buckets) * this.bucketMs;
  }

  private live(now: number, visit: (bucket: number, count: number) => void): void {
    const current = Math.floor(now / this.bucketMs);
    for (let i = 0; i < this.buckets; i++) {
      const b = this.stamps[i]!;
      if (b >= 0 && current - b < this.buckets && this.counts[i]! > 0) visit(b, this.counts[i]!);
    }
  }
}
