/**
 * Measures model loads by the process's RSS growth (workers are threads of this process, so their memory is in its
 * RSS). A load that overlaps another is not measured: the other's growth would be counted too. Main thread.
 */
export class LoadMeasures {
  private readonly running = new Set<{ overlapped: boolean }>();

  /** `rss`: the process's resident memory now, in bytes. */
  constructor(private readonly rss: () => number) {}

  /** Starts measuring one load: `end()` is its growth from now, or null when another load ran meanwhile. */
  begin(): { end(): number | null } {
    const before = this.rss();
    const self = { overlapped: this.running.size > 0 };
    for (const other of this.running) other.overlapped = true;
    this.running.add(self);
    return {
      end: () => {
        this.running.delete(self);
        return self.overlapped ? null : Math.max(0, this.rss() - before);
      },
    };
  }
}
