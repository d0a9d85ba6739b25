import { SSE_HEADERS } from '../protocol/sse.ts';
import type { HttpExchange } from './http-exchange.ts';

export interface SseWriterOptions {
  /** Bytes held for a client that does not read, before `onOverflow`. Defaults to 1 MiB. */
  bufferLimit: number;
  /** Interval of `: keep-alive` comments while nothing else is written. Defaults to 15 s. */
  keepAliveMs: number;
}

export const DEFAULT_SSE_WRITER_OPTIONS = {
  bufferLimit: 1 << 20,
  keepAliveMs: 15_000,
} satisfies Required<SseWriterOptions>;

/**
 * Writes one server-sent-event stream with backpressure (architecture habit 4). Events go straight to
 * uWS while it accepts them; once `write()` reports backpressure they are held here until `onWritable`,
 * at most `bufferLimit` bytes, after which `onOverflow` fires once (the caller cancels generation and the
 * connection is dropped). Owned by one request on the main thread; `dispose()` is idempotent.
 */
export class SseWriter {
  private resolveEnded: () => void = () => {};
  /**
   * Resolves once the stream's last bytes went to uWS after every queued event (end() called and the
   * backlog written), or once the connection is gone. A response is finished only then: shutdown waits for
   * it, so a slow reader's stream is not cut between "generation done" and "bytes sent".
   */
  readonly ended: Promise<void> = new Promise((r) => {
    this.resolveEnded = r;
  });
  private readonly pending: string[] = [];
  private pendingBytes = 0;
  private draining = false;
  private overflowed = false;
  private keepAliveTimer: NodeJS.Timeout | null = null;
  /** Set by every write; the keep-alive tick clears it. */
  private active = true;
  /** Events written in this event-loop turn, sent together in one uWS write (one syscall) at setImmediate. */
  private coalesced = '';
  private flushScheduled = false;
  private readonly options: SseWriterOptions;

  constructor(
    private readonly exchange: HttpExchange,
    private readonly onOverflow: () => void,
    options: Partial<SseWriterOptions> = {},
  ) {
    this.options = { ...DEFAULT_SSE_WRITER_OPTIONS, ...options };
  }

  /** Starts the keep-alive comments: one after every quiet half-interval, so silence never lasts `keepAliveMs`. */
  startKeepAlive(): void {
    if (this.keepAliveTimer) return;
    this.keepAliveTimer = setInterval(
      () => {
        if (this.exchange.closed) return this.dispose();
        if (!this.active) this.write(': keep-alive\n\n');
        this.active = false;
      },
      Math.max(25, Math.floor(this.options.keepAliveMs / 2)),
    );
    this.keepAliveTimer.unref();
  }

  /**
   * Queues `text` (one or more complete events). Events of one event-loop turn (e.g. several engine
   * steps that arrived together) leave in one write, which keeps syscalls per token down under load.
   */
  write(text: string): void {
    if (this.exchange.closed || this.overflowed) return;
    this.active = true;
    this.coalesced += text;
    if (!this.flushScheduled) {
      this.flushScheduled = true;
      setImmediate(this.flush);
    }
  }

  private readonly flush = (): void => {
    this.flushScheduled = false;
    const text = this.coalesced;
    this.coalesced = '';
    if (text.length === 0 || this.exchange.closed || this.overflowed) return;
    if (this.draining) {
      this.pending.push(text);
      this.pendingBytes += text.length;
      if (this.pendingBytes > this.options.bufferLimit) {
        this.overflowed = true;
        this.onOverflow();
      }
      return;
    }
    if (!this.exchange.writeChunk(text, 200, SSE_HEADERS)) void this.drain();
  };

  private async drain(): Promise<void> {
    this.draining = true;
    while (!this.exchange.closed) {
      await this.exchange.waitWritable();
      if (this.exchange.closed) break;
      const batch = this.pending.splice(0).join('');
      this.pendingBytes = 0;
      if (batch.length === 0) break;
      if (this.exchange.writeChunk(batch)) {
        if (this.pending.length === 0) break;
      }
    }
    this.draining = false;
    if (this.endRequested !== null && !this.exchange.closed) this.finish(this.endRequested);
    else if (this.exchange.closed) this.resolveEnded();
  }

  private endRequested: string | null = null;

  /** Ends the stream after everything queued is written. */
  end(last = ''): void {
    this.dispose();
    if (this.exchange.closed) {
      this.resolveEnded();
      return;
    }
    const text = this.coalesced + last;
    this.coalesced = '';
    if (this.draining) {
      this.endRequested = text;
      return;
    }
    this.finish(text);
  }

  private finish(last: string): void {
    const rest = this.pending.splice(0).join('') + last;
    this.pendingBytes = 0;
    this.exchange.endStream(rest, SSE_HEADERS);
    this.resolveEnded();
  }

  dispose(): void {
    if (this.keepAliveTimer) clearInterval(this.keepAliveTimer);
    this.keepAliveTimer = null;
  }
}
