import { describe, expect, it } from 'vitest';
import { backoffDelayMs, isRetryableStatus, parseProtoDurationMs, retryAfterFromHeaders } from '../../../src/providers/retry-policy.ts';

describe('retry policy', () => {
  it('retries 408, 409, 429 and 5xx (529 included), nothing else', () => {
    expect([408, 409, 429, 500, 502, 503, 504, 529].every(isRetryableStatus)).toBe(true);
    expect([400, 401, 403, 404, 413, 422].some(isRetryableStatus)).toBe(false);
  });

  it('backs off exponentially, capped, with at most 25 % jitter taken off', () => {
    expect(backoffDelayMs(0, 500, 8000, () => 0)).toBe(500);
    expect(backoffDelayMs(3, 500, 8000, () => 0)).toBe(4000);
    expect(backoffDelayMs(10, 500, 8000, () => 0)).toBe(8000);
    expect(backoffDelayMs(1, 500, 8000, () => 1)).toBe(750);
  });

  it('reads retry-after-ms, retry-after seconds (fractional) and HTTP dates', () => {
    const now = Date.parse('2026-01-01T00:00:00Z');
    expect(retryAfterFromHeaders(new Headers({ 'retry-after-ms': '250' }), now)).toBe(250);
    expect(retryAfterFromHeaders(new Headers({ 'retry-after-ms': '250', 'retry-after': '9' }), now)).toBe(250);
    expect(retryAfterFromHeaders(new Headers({ 'retry-after': '2' }), now)).toBe(2000);
    expect(retryAfterFromHeaders(new Headers({ 'retry-after': '1.5' }), now)).toBe(1500);
    expect(retryAfterFromHeaders(new Headers({ 'retry-after': 'Thu, 01 Jan 2026 00:00:07 GMT' }), now)).toBe(7000);
    expect(retryAfterFromHeaders(new Headers({ 'retry-after': 'Wed, 31 Dec 2025 23:59:00 GMT' }), now)).toBe(0);
    expect(retryAfterFromHeaders(new Headers({ 'retry-after': 'soon' }), now)).toBeUndefined();
    expect(retryAfterFromHeaders(new Headers({ 'retry-after': '-3' }), now)).toBeUndefined();
    expect(retryAfterFromHeaders(new Headers(), now)).toBeUndefined();
  });

  it('reads google.protobuf.Duration strings', () => {
    expect(parseProtoDurationMs('7s')).toBe(7000);
    expect(parseProtoDurationMs('0.250s')).toBe(250);
    expect(parseProtoDurationMs('7')).toBeUndefined();
    expect(parseProtoDurationMs(7)).toBeUndefined();
  });
});
