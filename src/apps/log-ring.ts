/**
 * An app's recent output: a ring of the last `capacity` lines (stdout, stderr, and Hearth's own notes
 * about the app such as restarts), with subscribers for `logs?follow=1`. In memory only: the ring starts
 * empty when Hearth starts. Hearth adds no secret to a line. Main thread; one per app.
 */
export interface LogLine {
  time: string;
  stream: 'stdout' | 'stderr' | 'hearth';
  deploymentId: string | null;
  line: string;
}

export type LogSubscriber = (line: LogLine) => void;

export const MAX_LOG_LINE = 8 * 1024;

export class LogRing {
  private readonly lines: LogLine[] = [];
  private start = 0;
  private readonly subscribers = new Map<LogSubscriber, () => void>();

  constructor(private readonly capacity = 1000) {}

  push(stream: LogLine['stream'], deploymentId: string | null, text: string): void {
    const entry: LogLine = {
      time: new Date().toISOString(),
      stream,
      deploymentId,
      line: text.length > MAX_LOG_LINE ? `${text.slice(0, MAX_LOG_LINE)}...` : text,
    };
    if (this.lines.length < this.capacity) this.lines.push(entry);
    else {
      this.lines[this.start] = entry;
      this.start = (this.start + 1) % this.capacity;
    }
    for (const s of this.subscribers.keys()) s(entry);
  }

  /** The last `n` lines, oldest first. */
  tail(n: number): LogLine[] {
    const ordered = [...this.lines.slice(this.start), ...this.lines.slice(0, this.start)];
    return ordered.slice(Math.max(0, ordered.length - n));
  }

  /** `onEnd` runs when the ring closes (the app was deleted, or Hearth stops). Returns the unsubscribe function. */
  subscribe(s: LogSubscriber, onEnd: () => void = () => {}): () => void {
    this.subscribers.set(s, onEnd);
    return () => this.subscribers.delete(s);
  }

  /** Ends every follower. */
  close(): void {
    const ends = [...this.subscribers.values()];
    this.subscribers.clear();
    for (const end of ends) end();
  }
}

/**
 * Splits a byte stream into lines (LF or CRLF), calling `onLine` per complete line; `flush` emits the rest.
 * A line longer than MAX_LOG_LINE is emitted once, cut (with '...'), as soon as it is that long, and the
 * rest of it, up to its newline, is dropped: what an app or a build prints never makes an unbounded line.
 */
export class LineSplitter {
  private rest = '';
  /** The current line was emitted cut; what comes before its newline is dropped. */
  private dropping = false;
  constructor(private readonly onLine: (line: string) => void) {}

  push(chunk: Buffer | string): void {
    const parts = (this.rest + chunk.toString()).split('\n');
    this.rest = parts.pop() ?? '';
    for (const p of parts) {
      if (this.dropping) this.dropping = false;
      else this.emit(p);
    }
    if (this.dropping) this.rest = '';
    else if (this.rest.length > MAX_LOG_LINE) {
      this.emit(this.rest);
      this.rest = '';
      this.dropping = true;
    }
  }

  flush(): void {
    if (this.rest !== '' && !this.dropping) this.emit(this.rest);
    this.rest = '';
    this.dropping = false;
  }

  private emit(raw: string): void {
    const line = raw.endsWith('\r') ? raw.slice(0, -1) : raw;
    this.onLine(line.length > MAX_LOG_LINE ? `${line.slice(0, MAX_LOG_LINE)}...` : line);
  }
}
