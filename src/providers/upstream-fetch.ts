import { setTimeout as sleep } from 'node:timers/promises';
import { upstreamBadResponse } from '../errors/errors.ts';
import type { ResolvedProviderOptions } from './chat-provider.ts';
import { describeNetworkError, readBodyText } from './body-reader.ts';
import { backoffDelayMs, retryAfterFromHeaders } from './retry-policy.ts';
import { UpstreamAttempt, clientAbortError } from './upstream-attempt.ts';
import { isRetryableFailure, parseUpstreamErrorBody, scrubSecrets, upstreamFailureToApiError } from './upstream-errors.ts';

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
 *  - `signal` aborts the fetch and the wait between attempts immediately (-> AbortError).
 */
export async function sendUpstream(
  provider: string,
  request: UpstreamRequest,
  call: { signal: AbortSignal; apiKey: string },
  options: ResolvedProviderOptions,
): Promise<UpstreamExchange> {
  const secrets = [call.apiKey];
  for (let attemptNo = 0; ; attemptNo++) {
    if (call.signal.aborted) throw clientAbortError();
    const isLast = attemptNo >= options.maxRetries;
    const attempt = new UpstreamAttempt(provider, call.signal);
    let response: Response;
    attempt.arm(options.timeoutMs);
    try {
      response = await fetch(request.url, { method: 'POST', headers: request.headers, body: request.body, signal: attempt.signal });
    } catch (err) {
      attempt.dispose();
      const failure = attempt.abortFailure();
      if (failure instanceof DOMException) throw failure;
      const canRetry = !isLast && (failure === null || options.retryOnTimeout);
      if (!canRetry) throw failure ?? upstreamBadResponse(provider, `could not be reached (${scrubSecrets(describeNetworkError(err), secrets)})`, 'network_error');
      await abortableSleep(backoffDelayMs(attemptNo, options.retryBaseDelayMs, options.maxRetryDelayMs), call.signal);
      continue;
    }
    attempt.disarm();
    if (response.ok) return { response, attempt };

    let bodyText = '';
    try {
      bodyText = await readBodyText(response, attempt, options.idleTimeoutMs, MAX_ERROR_BODY_BYTES, provider);
    } catch {
      if (call.signal.aborted) throw clientAbortError();
      bodyText = ''; // an unreadable error body still leaves the status to act on
    } finally {
      attempt.dispose();
    }
    const info = parseUpstreamErrorBody(response.status, bodyText, secrets);
    const hintMs = retryAfterFromHeaders(response.headers) ?? info.retryAfterMs;
    const retryable = isRetryableFailure(response.status, info);
    if (!retryable || isLast || (hintMs !== undefined && hintMs > options.maxRetryDelayMs)) {
      throw upstreamFailureToApiError(provider, response.status, info, hintMs);
    }
    const delayMs = hintMs ?? backoffDelayMs(attemptNo, options.retryBaseDelayMs, options.maxRetryDelayMs);
    await abortableSleep(delayMs, call.signal);
  }
}

/** Waits between attempts; the caller's abort ends the wait at once with an AbortError. */
async function abortableSleep(delayMs: number, signal: AbortSignal): Promise<void> {
  try {
    await sleep(delayMs, undefined, { signal });
  } catch {
    throw clientAbortError();
  }
}
