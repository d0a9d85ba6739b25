/**
 * Incremental stop-string detection over streamed text. `push(text)` returns the text that is safe to
 * emit now: everything before a stop string (then `stopped` is true and the rest is dropped), minus any
 * tail that could still become the start of a stop string (held back until the next push or `flush`).
 */
export class StopDetector {
  private held = '';
  stopped = false;
  /** The stop string found (set when `stopped` becomes true). */
  matched: string | undefined;
  private readonly maxLen: number;

  constructor(private readonly stops: readonly string[]) {
    this.maxLen = stops.reduce((m, s) => Math.max(m, s.length), 0);
  }

  push(text: string): string {
    if (this.stopped) return '';
    if (this.maxLen === 0) return text;
    const buf = this.held + text;
    let cut = -1;
    for (const s of this.stops) {
      const i = buf.indexOf(s);
      if (i !== -1 && (cut === -1 || i < cut)) {
        cut = i;
        this.matched = s;
      }
    }
    if (cut !== -1) {
      this.stopped = true;
      this.held = '';
      return buf.slice(0, cut);
    }
    const keep = this.partialSuffixLength(buf);
    this.held = buf.slice(buf.length - keep);
    return buf.slice(0, buf.length - keep);
  }

  /** Text held back at the end of generation (it never became a stop string). */
  flush(): string {
    const rest = this.stopped ? '' : this.held;
    this.held = '';
    return rest;
  }

  /** Longest suffix of buf that is a proper prefix of some stop string. */
  private partialSuffixLength(buf: string): number {
    const limit = Math.min(buf.length, this.maxLen - 1);
    for (let len = limit; len > 0; len--) {
      const tail = buf.slice(buf.length - len);
      if (this.stops.some((s) => s.startsWith(tail))) return len;
    }
    return 0;
  }
}
