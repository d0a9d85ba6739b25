import { describe, expect, it } from 'vitest';
import { SignInLimiter } from '../../../src/limits/sign-in-limiter.ts';

const T0 = Date.UTC(2026, 0, 1);

describe('SignInLimiter', () => {
  it('refuses an email after its failures, until they leave the window; success clears the email', () => {
    const l = new SignInLimiter({ perEmail: 3, perAddress: 100, windowMs: 15 * 60_000 });
    for (let i = 0; i < 3; i++) {
      expect(l.retryAfter('a@x.io', '10.0.0.1', T0)).toBe(0);
      l.failed('a@x.io', '10.0.0.1', T0);
    }
    expect(l.retryAfter('a@x.io', '10.0.0.2', T0)).toBe(15 * 60);
    expect(l.retryAfter('b@x.io', '10.0.0.1', T0)).toBe(0);
    expect(l.retryAfter('a@x.io', '10.0.0.1', T0 + 15 * 60_000)).toBe(0);
    l.succeeded('a@x.io');
    expect(l.retryAfter('a@x.io', '10.0.0.1', T0)).toBe(0);
  });

  it('refuses an address after its failures, whatever the email', () => {
    const l = new SignInLimiter({ perEmail: 100, perAddress: 4 });
    for (let i = 0; i < 4; i++) l.failed(`u${i}@x.io`, '10.0.0.9', T0);
    expect(l.retryAfter('new@x.io', '10.0.0.9', T0 + 1000)).toBeGreaterThan(0);
    expect(l.retryAfter('new@x.io', '10.0.0.8', T0 + 1000)).toBe(0);
  });

  it('tracks a bounded number of entries', () => {
    const l = new SignInLimiter({ perEmail: 1, perAddress: 1000, maxTracked: 10 });
    for (let i = 0; i < 50; i++) l.failed(`u${i}@x.io`, `a${i}`, T0);
    expect(l.retryAfter('u0@x.io', 'z', T0)).toBe(0); // forgotten
    expect(l.retryAfter('u49@x.io', 'z', T0)).toBeGreaterThan(0);
  });
});
