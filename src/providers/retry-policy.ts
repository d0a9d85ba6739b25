/**
 * Pure pieces of the upstream retry policy: which statuses are retried, how long to back off, and how
 * to read a vendor's retry hint. No I/O; upstream-fetch.ts applies them.
 */

/** 408 request timeout, 409 conflict (OpenAI lock timeouts), 429, 5xx including Anthropic's 529. */
export function isRetryableStatus(status: number): boolean {
  return status === 408 || status === 409 || status === 429 || status >= 500;
}

/**
 * Exponential backoff with jitter: min(base * 2^attempt, max), reduced by up to 25 %, so concurrent
 * clients spread out but never wait longer than the cap. `attempt` is 0 for the wait after the first try.
 */
export function backoffDelayMs(
  attempt: number,
  baseMs: number,
  maxMs: number,
  random: () => number = Math.random,
): number {
  const exponential = Math.min(baseMs * 2 ** attempt, maxMs);
  return Math.max(0, Math.round(exponential * (1 - 0.25 * random())));
}

/**
 * The longest retry hint Hearth believes (1 day). An upstream hint is untrusted input: `1e308`, `Infinity`
 * or a date in the year 9999 is clamped here before it becomes a wait or the client's `Retry-After`.
 */
export const MAX_RETRY_HINT_MS = 86_400_000;

/** A hint in ms, clamped to 0..MAX_RETRY_HINT_MS and rounded; undefined for NaN or negative values. */
export function clampRetryHintMs(ms: number): number | undefined {
  if (Number.isNaN(ms) || ms < 0) return undefined;
  return Math.round(Math.min(ms, MAX_RETRY_HINT_MS));
}

/**
 * The wait an upstream asked for, in ms, or undefined. Reads `retry-after-ms` (OpenAI, milliseconds),
 * then `retry-after` as seconds (fractions allowed) or as an HTTP date. Negative or unparsable -> undefined;
 * a date in the past -> 0; anything longer than MAX_RETRY_HINT_MS -> MAX_RETRY_HINT_MS.
 */
export function retryAfterFromHeaders(headers: Headers, now: number = Date.now()): number | undefined {
  const ms = headers.get('retry-after-ms');
  if (ms !== null && ms.trim() !== '') {
    const value = clampRetryHintMs(Number(ms));
    if (value !== undefined) return value;
  }
  const after = headers.get('retry-after');
  if (after === null || after.trim() === '') return undefined;
  const trimmed = after.trim();
  // Seconds, also in forms RFC 9110 does not allow ('1e308', '-3', 'Infinity'); a bare number is never a date.
  if (/^[-+.\deE]+$/.test(trimmed) || /^[-+]?(Infinity|NaN)$/i.test(trimmed))
    return clampRetryHintMs(Number(trimmed) * 1000);
  const date = Date.parse(trimmed);
  if (Number.isNaN(date)) return undefined;
  return clampRetryHintMs(Math.max(0, date - now));
}

/** A google.protobuf.Duration as JSON ("7s", "1.5s", "0.250s") in ms (clamped like header hints), or undefined. */
export function parseProtoDurationMs(value: unknown): number | undefined {
  if (typeof value !== 'string') return undefined;
  const match = /^(\d+(?:\.\d+)?)s$/.exec(value.trim());
  return match ? clampRetryHintMs(Number(match[1]) * 1000) : undefined;
}
