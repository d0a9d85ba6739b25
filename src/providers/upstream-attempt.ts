import type { ApiError } from '../errors/api-error.ts';
import { upstreamTimeout } from '../errors/errors.ts';

/** The error every provider throws when the caller's signal aborts: a DOMException named 'AbortError'. */
export function clientAbortError(): DOMException {
  return new DOMException('The upstream call was aborted: the client went away', 'AbortError');
}

export function isAbortError(err: unknown): boolean {
  return typeof err === 'object' && err !== null && (err as { name?: unknown }).name === 'AbortError';
}

/**
 * One HTTP exchange with a vendor: owns its AbortController and its one time-out timer. The fetch and the
 * body read use `signal`, which aborts when the caller's signal aborts, when the timer fires, or on
 * dispose(). Created per attempt by sendUpstream(); after a successful attempt the caller owns it and
 * must dispose() it in `finally` (idempotent; cancels an unread body, which closes the connection).
 * Main thread only.
 */
export class UpstreamAttempt {
  readonly signal: AbortSignal;
  private readonly controller = new AbortController();
  private timer: NodeJS.Timeout | undefined;
  private timedOutAfterMs: number | null = null;

  constructor(
    private readonly provider: string,
    private readonly callSignal: AbortSignal,
  ) {
    this.signal = AbortSignal.any([callSignal, this.controller.signal]);
  }

  /** Starts the time-out: if `ms` pass before disarm(), the exchange is aborted and counts as timed out. */
  arm(ms: number): void {
    this.disarm();
    this.timer = setTimeout(() => {
      this.timedOutAfterMs = ms;
      this.controller.abort(new DOMException(`no answer within ${ms} ms`, 'TimeoutError'));
    }, ms);
    this.timer.unref();
  }

  disarm(): void {
    if (this.timer !== undefined) clearTimeout(this.timer);
    this.timer = undefined;
  }

  get timedOut(): boolean {
    return this.timedOutAfterMs !== null;
  }

  /**
   * The error to throw for a failure seen while this exchange ran, when the failure was caused by an
   * abort or the time-out: the client's AbortError first, then 504. Null for any other failure.
   */
  abortFailure(): DOMException | ApiError | null {
    if (this.callSignal.aborted) return clientAbortError();
    if (this.timedOutAfterMs !== null) return upstreamTimeout(this.provider, this.timedOutAfterMs);
    return null;
  }

  dispose(): void {
    this.disarm();
    if (!this.controller.signal.aborted) this.controller.abort(new DOMException('upstream exchange disposed', 'AbortError'));
  }
}
