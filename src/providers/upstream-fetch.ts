import { setTimeout as sleep } from 'node:timers/promises';
import { upstreamBadResponse } from '../errors/errors.ts';
import type { ResolvedProviderOptions } from './chat-provider.ts';
import { describeNetworkError, readBodyText } from './body-reader.ts';
import { backoffDelayMs, retryAfterFromHeaders } from './retry-policy.ts';
import { clientAbortError } from './abort-error.ts';
import { UpstreamAttempt } from './upstream-attempt.ts';
import type { UpstreamCall } from './upstream-call.ts';
import { isRetryableFailure, parseUpstreamErrorBody, upstreamFailureToApiError } from './upstream-errors.ts';

/** An HTTP request in a vendor's wire format, built by a VendorAdapter. */
export interface UpstreamRequest {
  url: string;
  headers: Record<string, string>;
  body: string;
}

/** A 2xx response whose body is still unread, with the attempt that owns it (caller disposes). */
export interface UpstreamExchange {
  response: Response;
  attempt: UpstreamAttempt;
}

const MAX_ERROR_BODY_BYTES = 64 * 1024;

/**
 * Sends `request` with Hearth's one upstream policy and resolves with the first 2xx response:
 *  - each attempt has `timeoutMs` to deliver response headers (-> 504 `timeout`; retried only with retryOnTimeout);
 *  - 408/409/429/5xx and network errors before any response are retried up to `maxRetries` times, waiting
 *    the upstream's Retry-After / retry-after-ms / RetryInfo hint, else exponential backoff with jitter;
 *    a hint longer than `maxRetryDelayMs` ends the retries at once (its value is passed on to the client);
 *  - other statuses fail at once; failures are mapped by upstreamFailureToApiError();
 *  - redirects are never followed (`redirect: 'manual'`): the key must not reach another host, so a 3xx is a
 *    502 `upstream_redirect` at once;
 *  - the call's signal (caller gone, or the call's deadline) aborts the fetch and the wait between attempts
 *    immediately (-> AbortError, or 504 deadline_exceeded); a wait that would outlast the deadline is not started.
 */
export async function sendUpstream(
  request: UpstreamRequest,
  call: UpstreamCall,
  options: ResolvedProviderOptions,
): Promise<UpstreamExchange> {
  const provider = call.provider;
  for (let attemptNo = 0; ; attemptNo++) {
    const ended = call.abortFailure();
    if (ended !== null) throw ended;
    const isLast = attemptNo >= options.maxRetries;
    const attempt = new UpstreamAttempt(call);
    let response: Response;
    attempt.arm(options.timeoutMs);
    try {
      response = await fetch(request.url, {
        method: 'POST',
        headers: request.headers,
        body: request.body,
        signal: attempt.signal,
        redirect: 'manual',
      });
    } catch (err) {
      attempt.dispose();
      const failure = attempt.abortFailure();
      if (failure instanceof DOMException || call.abortFailure() !== null) throw failure;
      const canRetry = !isLast && (failure === null || options.retryOnTimeout);
      if (!canRetry)
        throw (
          failure ??
          upstreamBadResponse(
            provider,
            `could not be reached (${call.scrubber.scrub(describeNetworkError(err))})`,
            'network_error',
          )
        );
      await waitBeforeRetry(backoffDelayMs(attemptNo, options.retryBaseDelayMs, options.maxRetryDelayMs), call);
      continue;
    }
    attempt.disarm();
    if (response.ok) return { response, attempt };
    if (response.status >= 300 && response.status < 400) {
      attempt.dispose();
      throw upstreamBadResponse(
        provider,
        `answered with a redirect (HTTP ${response.status}); redirects are not followed, so the provider key never leaves the configured base URL`,
        'upstream_redirect',
      );
    }

    let bodyText = '';
    try {
      bodyText = await readBodyText(response, attempt, options.idleTimeoutMs, MAX_ERROR_BODY_BYTES, provider);
    } catch {
      const ended = call.abortFailure();
      if (ended !== null) throw ended;
      bodyText = ''; // an unreadable error body still leaves the status to act on
    } finally {
      attempt.dispose();
    }
    const info = parseUpstreamErrorBody(response.status, bodyText, call.scrubber);
    const hintMs = retryAfterFromHeaders(response.headers) ?? info.retryAfterMs;
    const retryable = isRetryableFailure(response.status, info);
    const delayMs = hintMs ?? backoffDelayMs(attemptNo, options.retryBaseDelayMs, options.maxRetryDelayMs);
    if (
      !retryable ||
      isLast ||
      (hintMs !== undefined && hintMs > options.maxRetryDelayMs) ||
      delayMs >= call.remainingMs()
    ) {
      throw upstreamFailureToApiError(provider, response.status, info, hintMs);
    }
    await waitBeforeRetry(delayMs, call);
  }
}

/** Waits between attempts; the call's signal ends the wait at once (AbortError, or the deadline's 504). */
async function waitBeforeRetry(delayMs: number, call: UpstreamCall): Promise<void> {
  try {
    await sleep(delayMs, undefined, { signal: call.signal });
  } catch {
    throw call.abortFailure() ?? clientAbortError();
  }
}
