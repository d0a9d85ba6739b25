import { describe, expect, it } from 'vitest';
import { formatReset, KeyLimiter } from '../../../src/limits/key-limiter.ts';
import { WindowCounter } from '../../../src/limits/window-counter.ts';

const T0 = Date.UTC(2026, 0, 1, 0, 0, 0);
const limits = (
  l: Partial<{ requestsPerMinute: number | null; tokensPerMinute: number | null; maxConcurrent: number | null }>,
) => ({ requestsPerMinute: null, tokensPerMinute: null, maxConcurrent: null, ...l });
const header = (headers: Array<[string, string]>, name: string) => headers.find(([k]) => k === name)?.[1];

describe('WindowCounter', () => {
  it('slides: counts leave the window one bucket at a time', () => {
    const w = new WindowCounter(1000, 60);
    w.add(3, T0);
    w.add(2, T0 + 30_000);
    expect(w.total(T0 + 59_999)).toBe(5);
    expect(w.total(T0 + 60_000)).toBe(2);
    expect(w.total(T0 + 90_000)).toBe(0);
  });

  it('says when there is room again and when it is empty', () => {
    const w = new WindowCounter(1000, 60);
    w.add(1, T0);
    w.add(1, T0 + 10_000);
    expect(w.msUntilRoom(3, T0 + 20_000)).toBe(0);
    expect(w.msUntilRoom(2, T0 + 20_000)).toBe(40_000); // the first count leaves at T0 + 60 s
    expect(w.msUntilRoom(1, T0 + 20_000)).toBe(50_000);
    expect(w.msUntilEmpty(T0 + 20_000)).toBe(50_000);
    expect(w.msUntilEmpty(T0 + 80_000)).toBe(0);
  });
});

describe('KeyLimiter', () => {
  it('a key without limits costs nothing and gets no headers', () => {
    const l = new KeyLimiter();
    const a = l.admit('k', limits({}), T0);
    expect(a).toMatchObject({ ok: true, headers: [] });
    expect(l.inFlight('k')).toBe(0);
  });

  it('requests per minute: admits up to the limit, then 429 with Retry-After until the oldest leaves', () => {
    const l = new KeyLimiter();
    const lim = limits({ requestsPerMinute: 2 });
    const a = l.admit('k', lim, T0);
    expect(a.ok).toBe(true);
    expect(header(a.headers, 'x-ratelimit-limit-requests')).toBe('2');
    expect(header(a.headers, 'x-ratelimit-remaining-requests')).toBe('1');
    expect(header(a.headers, 'x-ratelimit-reset-requests')).toBe('1m0s');
    if (a.ok) a.lease.release();
    expect(l.admit('k', lim, T0 + 15_000).ok).toBe(true);
    const refused = l.admit('k', lim, T0 + 20_000);
    expect(refused.ok).toBe(false);
    if (refused.ok) return;
    expect(refused.error).toMatchObject({
      status: 429,
      type: 'rate_limit_error',
      code: 'rate_limit_exceeded',
      param: 'limits.requestsPerMinute',
      retryAfter: 40,
    });
    expect(refused.error.toBody().error.limit).toBe('requests');
    expect(header(refused.headers, 'x-ratelimit-remaining-requests')).toBe('0');
    expect(header(refused.headers, 'x-ratelimit-reset-requests')).toBe('55s');
    expect(l.admit('k', lim, T0 + 60_000).ok).toBe(true); // the first one left the window
  });

  it('tokens per minute: counted from usage after completion, refused once used up', () => {
    const l = new KeyLimiter();
    const lim = limits({ tokensPerMinute: 100 });
    const now = Date.now();
    const a = l.admit('k', lim, now);
    expect(header(a.headers, 'x-ratelimit-remaining-tokens')).toBe('100');
    if (!a.ok) throw new Error('refused');
    a.lease.recordTokens(100);
    a.lease.release();
    const b = l.admit('k', lim, now);
    expect(b.ok).toBe(false);
    if (b.ok) return;
    expect(b.error).toMatchObject({ code: 'rate_limit_exceeded', param: 'limits.tokensPerMinute' });
    expect(b.error.retryAfter).toBeGreaterThanOrEqual(1);
    expect(header(b.headers, 'x-ratelimit-remaining-tokens')).toBe('0');
    expect(header(b.headers, 'x-ratelimit-limit-tokens')).toBe('100');
  });

  it('max concurrent: one key at its cap leaves another key flowing; release is idempotent', () => {
    const l = new KeyLimiter();
    const lim = limits({ maxConcurrent: 1 });
    const a = l.admit('busy', lim, T0);
    if (!a.ok) throw new Error('refused');
    expect(header(a.headers, 'x-ratelimit-remaining-concurrent')).toBe('0');
    const b = l.admit('busy', lim, T0);
    expect(b.ok).toBe(false);
    if (!b.ok)
      expect(b.error).toMatchObject({ code: 'rate_limit_exceeded', param: 'limits.maxConcurrent', retryAfter: 1 });
    expect(l.admit('other', lim, T0).ok).toBe(true);
    a.lease.release();
    a.lease.release();
    expect(l.inFlight('busy')).toBe(0);
    expect(l.admit('busy', lim, T0).ok).toBe(true);
    expect(l.inFlight('busy')).toBe(1);
  });

  it('a refused request does not count against the window', () => {
    const l = new KeyLimiter();
    const lim = limits({ requestsPerMinute: 5, maxConcurrent: 1 });
    const a = l.admit('k', lim, T0);
    for (let i = 0; i < 10; i++) expect(l.admit('k', lim, T0).ok).toBe(false);
    if (a.ok) a.lease.release();
    const b = l.admit('k', lim, T0);
    expect(header(b.headers, 'x-ratelimit-remaining-requests')).toBe('3');
  });

  it('formats reset durations like OpenAI', () => {
    expect(formatReset(0)).toBe('0s');
    expect(formatReset(17)).toBe('17ms');
    expect(formatReset(41_200)).toBe('42s');
    expect(formatReset(60_000)).toBe('1m0s');
    expect(formatReset(61_000)).toBe('1m1s');
  });
});
