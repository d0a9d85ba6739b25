import type { ApiError } from '../errors/api-error.ts';
import { upstreamDeadline } from '../errors/errors.ts';
import { SecretScrubber } from './secret-scrubber.ts';
import { clientAbortError } from './abort-error.ts';

/**
 * The scope of one provider call, from the first request to the last byte of the answer: the caller's
 * signal, the call's deadline for the WHOLE answer (retries, waits and body reads included) and the
 * scrubber that knows the call's key. `signal` aborts when the caller aborts or the deadline passes; every
 * attempt's fetch and body read hang off it, so either one aborts the upstream request at once. Created
 * and disposed (idempotent; in `finally`) by HttpChatProvider. Main thread.
 */
export class UpstreamCall {
  readonly signal: AbortSignal;
  readonly scrubber: SecretScrubber;
  private readonly deadline = new AbortController();
  private readonly timer: NodeJS.Timeout;
  private readonly startedAt = performance.now();
  private expired = false;

  constructor(
    readonly provider: string,
    private readonly callerSignal: AbortSignal,
    private readonly deadlineMs: number,
    secret: string,
  ) {
    this.scrubber = new SecretScrubber([secret]);
    this.signal = AbortSignal.any([callerSignal, this.deadline.signal]);
    this.timer = setTimeout(() => {
      this.expired = true;
      this.deadline.abort(new DOMException(`no complete answer within ${deadlineMs} ms`, 'TimeoutError'));
    }, deadlineMs);
    this.timer.unref();
  }

  /** Milliseconds left before the deadline (never negative). */
  remainingMs(): number {
    return Math.max(0, this.deadlineMs - (performance.now() - this.startedAt));
  }

  /** The error for a failure caused by this scope's signal: the caller's AbortError first, then the deadline's 504; else null. */
  abortFailure(): DOMException | ApiError | null {
    if (this.callerSignal.aborted) return clientAbortError();
    if (this.expired) return upstreamDeadline(this.provider, this.deadlineMs);
    return null;
  }

  /** What the call throws for `err`: an abort or deadline failure when the scope ended, else `err`; scrubbed either way. */
  failure(err: unknown): unknown {
    return this.scrubber.scrubError(this.abortFailure() ?? err);
  }

  dispose(): void {
    clearTimeout(this.timer);
  }
}
