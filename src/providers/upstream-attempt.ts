import type { ApiError } from '../errors/api-error.ts';
import { upstreamTimeout } from '../errors/errors.ts';
import type { UpstreamCall } from './upstream-call.ts';

/**
 * One HTTP exchange with a vendor: owns its AbortController and its one time-out timer. The fetch and the
 * body read use `signal`, which aborts when the call's signal aborts (caller gone, or the call's deadline),
 * when the timer fires, or on dispose(). Created per attempt by sendUpstream(); after a successful attempt the caller owns it and
 * must dispose() it in `finally` (idempotent; cancels an unread body, which closes the connection).
 * Main thread only.
 */
export class UpstreamAttempt {
  readonly signal: AbortSignal;
  private readonly controller = new AbortController();
  private timer: NodeJS.Timeout | undefined;
  private timedOutAfterMs: number | null = null;

  constructor(private readonly call: UpstreamCall) {
    this.signal = AbortSignal.any([call.signal, this.controller.signal]);
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
   * abort or a time-out: the client's AbortError first, then the call's deadline (504), then this
   * attempt's time-out (504). Null for any other failure.
   */
  abortFailure(): DOMException | ApiError | null {
    const callFailure = this.call.abortFailure();
    if (callFailure !== null) return callFailure;
    if (this.timedOutAfterMs !== null) return upstreamTimeout(this.call.provider, this.timedOutAfterMs);
    return null;
  }

  dispose(): void {
    this.disarm();
    if (!this.controller.signal.aborted)
      this.controller.abort(new DOMException('upstream exchange disposed', 'AbortError'));
  }
}
