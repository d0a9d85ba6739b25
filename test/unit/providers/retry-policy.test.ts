import { describe, expect, it } from 'vitest';
import * as retry from '../../../src/providers/retry-policy.ts';

describe('retry policy', () => {
  it('retries 408, 409, 429 and 5xx (529 included), nothing else', () => {
    expect([408, 409, 429, 500, 502, 503, 504, 529].every(retry.isRetryableStatus)).toBe(true);
    expect([400, 401, 403, 404, 413, 422].some(retry.isRetryableStatus)).toBe(false);
  });

  it('backs off exponentially, capped, with at most 25 % jitter taken off', () => {
    expect(retry.backoffDelayMs(0, 500, 8000, () => 0)).toBe(500);
    expect(retry.backoffDelayMs(3, 500, 8000, () => 0)).toBe(4000);
    expect(retry.backoffDelayMs(10, 500, 8000, () => 0)).toBe(8000);
    expect(retry.backoffDelayMs(1, 500, 8000, () => 1)).toBe(750);
  });

  it('reads retry-after-ms, retry-after seconds (fractional) and HTTP dates', () => {
    const now = Date.parse('2026-01-01T00:00:00Z');
    expect(retry.retryAfterFromHeaders(new Headers({ 'retry-after-ms': '250' }), now)).toBe(250);
    expect(retry.retryAfterFromHeaders(new Headers({ 'retry-after-ms': '250', 'retry-after': '9' }), now)).toBe(250);
    expect(retry.retryAfterFromHeaders(new Headers({ 'retry-after': '2' }), now)).toBe(2000);
    expect(retry.retryAfterFromHeaders(new Headers({ 'retry-after': '1.5' }), now)).toBe(1500);
    expect(retry.retryAfterFromHeaders(new Headers({ 'retry-after': 'Thu, 01 Jan 2026 00:00:07 GMT' }), now)).toBe(
      7000,
    );
    expect(retry.retryAfterFromHeaders(new Headers({ 'retry-after': 'Wed, 31 Dec 2025 23:59:00 GMT' }), now)).toBe(0);
    expect(retry.retryAfterFromHeaders(new Headers({ 'retry-after': 'soon' }), now)).toBeUndefined();
    expect(retry.retryAfterFromHeaders(new Headers({ 'retry-after': '-3' }), now)).toBeUndefined();
    expect(retry.retryAfterFromHeaders(new Headers(), now)).toBeUndefined();
  });

  it('clamps absurd hints to a day and ignores negative or NaN ones (issue 9)', () => {
    const now = Date.parse('2026-01-01T00:00:00Z');
    const read = (headers: Record<string, string>) => retry.retryAfterFromHeaders(new Headers(headers), now);
    expect(retry.MAX_RETRY_HINT_MS).toBe(86_400_000);
    expect(read({ 'retry-after-ms': '1e308' })).toBe(retry.MAX_RETRY_HINT_MS);
    expect(read({ 'retry-after-ms': 'Infinity' })).toBe(retry.MAX_RETRY_HINT_MS);
    expect(read({ 'retry-after': '1e308' })).toBe(retry.MAX_RETRY_HINT_MS);
    expect(read({ 'retry-after': '9'.repeat(400) })).toBe(retry.MAX_RETRY_HINT_MS);
    expect(read({ 'retry-after': 'Fri, 31 Dec 9999 23:59:59 GMT' })).toBe(retry.MAX_RETRY_HINT_MS);
    expect(read({ 'retry-after-ms': '-5' })).toBeUndefined();
    expect(read({ 'retry-after-ms': 'NaN' })).toBeUndefined();
    expect(read({ 'retry-after': 'NaN' })).toBeUndefined();
    expect(read({ 'retry-after': '-1e308' })).toBeUndefined();
    expect(read({ 'retry-after-ms': 'NaN', 'retry-after': '3' })).toBe(3000);
    expect(read({ 'retry-after-ms': '12.7' })).toBe(13);
    expect(retry.parseProtoDurationMs(`${'9'.repeat(400)}s`)).toBe(retry.MAX_RETRY_HINT_MS);
  });

  it('reads google.protobuf.Duration strings', () => {
    expect(retry.parseProtoDurationMs('7s')).toBe(7000);
    expect(retry.parseProtoDurationMs('0.250s')).toBe(250);
    expect(retry.parseProtoDurationMs('7')).toBeUndefined();
    expect(retry.parseProtoDurationMs(7)).toBeUndefined();
  });
});
