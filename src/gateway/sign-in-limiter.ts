import { WindowCounter } from './window-counter.ts';

export interface SignInLimiterOptions {
  /** Failed sign-ins allowed per email within the window. Defaults to 5. */
  perEmail?: number;
  /** Failed sign-ins allowed per client address within the window. Defaults to 20. */
  perAddress?: number;
  /** Defaults to 15 minutes. */
  windowMs?: number;
  /** Emails and addresses tracked at once; the oldest are forgotten beyond it. Defaults to 50 000. */
  maxTracked?: number;
}

export const DEFAULT_SIGN_IN_LIMITS = { perEmail: 5, perAddress: 20, windowMs: 15 * 60_000, maxTracked: 50_000 } as const satisfies Required<SignInLimiterOptions>;
const BUCKETS = 15;

/**
 * Failed sign-ins per email and per client address (in memory, sliding window in 15 buckets). Once either
 * is at its limit, sign-ins for that email / from that address are refused until old failures leave the
 * window, even with the right password (so guessing gains nothing). A success clears its email's count.
 * Bounded: at most `maxTracked` entries per kind, the oldest dropped first. Main thread only.
 */
export class SignInLimiter {
  private readonly o: Required<SignInLimiterOptions>;
  private readonly byEmail = new Map<string, WindowCounter>();
  private readonly byAddress = new Map<string, WindowCounter>();

  constructor(options: SignInLimiterOptions = {}) {
    this.o = { ...DEFAULT_SIGN_IN_LIMITS, ...options };
  }

  /** Seconds to wait before trying again, or 0 when a sign-in may be tried now. */
  retryAfter(email: string, address: string, now = Date.now()): number {
    const ms = Math.max(this.byEmail.get(email)?.msUntilRoom(this.o.perEmail, now) ?? 0, this.byAddress.get(address)?.msUntilRoom(this.o.perAddress, now) ?? 0);
    return ms === 0 ? 0 : Math.max(1, Math.ceil(ms / 1000));
  }

  failed(email: string, address: string, now = Date.now()): void {
    this.counter(this.byEmail, email).add(1, now);
    this.counter(this.byAddress, address).add(1, now);
  }

  succeeded(email: string): void {
    this.byEmail.delete(email);
  }

  private counter(map: Map<string, WindowCounter>, key: string): WindowCounter {
    let c = map.get(key);
    if (c === undefined) {
      if (map.size >= this.o.maxTracked) map.delete(map.keys().next().value!);
      c = new WindowCounter(Math.ceil(this.o.windowMs / BUCKETS), BUCKETS);
      map.set(key, c);
    }
    return c;
  }
}
