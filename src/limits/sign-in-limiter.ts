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

export const DEFAULT_SIGN_IN_LIMITS = {
  perEmail: 5,
  perAddress: 20,
  windowMs: 15 * 60_000,
  maxTracked: 50_000,
} as const satisfies Required<SignInLimiterOptions>;
/** Buckets of the sign-in window (one a minute with the default 15 minutes). */
export const SIGN_IN_BUCKETS = 15;

/** A password check in progress, holding its place under the limits until it ends (exactly once). */
export interface SignInAttempt {
  /** The password was wrong: a failure for the email and the address. Ends the attempt. */
  failed(): void;
  /** The password was right: clears the email's failures. Ends the attempt. */
  succeeded(): void;
  /** Ends the attempt without an outcome (the check did not run to the end); a no-op once it ended. */
  end(): void;
}

/** A sign-in refused (seconds to wait) or started (its attempt holds its place under the limits). */
export type SignInGate = { retryAfter: number } | { attempt: SignInAttempt };

/**
 * The sign-in limiter behind one interface: this in-memory SignInLimiter (one process) and FleetSignInLimiter (the
 * fleet's counts in PostgreSQL, limits/fleet-sign-in-limiter.ts). `tryBegin` checks and starts in one step.
 */
export interface SignInLimiting {
  tryBegin(email: string, address: string): SignInGate | Promise<SignInGate>;
}

/**
 * Failed sign-ins per email and per client address (in memory, sliding window in 15 buckets). Once either
 * is at its limit, sign-ins for that email / from that address are refused until old failures leave the
 * window, even with the right password (so guessing gains nothing). A success clears its email's count.
 * A check in progress (`begin` .. its outcome) counts as a failure until it ends, so guesses sent at once
 * cannot all pass the limit before the first of them failed (password checks run off the event loop).
 * Bounded: at most `maxTracked` entries per kind, the oldest dropped first; the in-progress counts hold
 * only keys with checks running. Main thread only.
 */
export class SignInLimiter implements SignInLimiting {
  private readonly o: Required<SignInLimiterOptions>;
  private readonly byEmail = new Map<string, WindowCounter>();
  private readonly byAddress = new Map<string, WindowCounter>();
  private readonly checkingEmail = new Map<string, number>();
  private readonly checkingAddress = new Map<string, number>();

  constructor(options: SignInLimiterOptions = {}) {
    this.o = { ...DEFAULT_SIGN_IN_LIMITS, ...options };
  }

  /**
   * Seconds to wait before trying again, or 0 when a sign-in may be tried now. When only checks in
   * progress fill the limit, 1 (they end within about a second).
   */
  retryAfter(email: string, address: string, now = Date.now()): number {
    const ms = Math.max(
      signInWait(this.byEmail.get(email), this.checkingEmail.get(email) ?? 0, this.o.perEmail, now),
      signInWait(this.byAddress.get(address), this.checkingAddress.get(address) ?? 0, this.o.perAddress, now),
    );
    return ms === 0 ? 0 : Math.max(1, Math.ceil(ms / 1000));
  }

  /** `retryAfter`, then `begin` when it said 0 (one step: nothing runs between them on the main thread). */
  tryBegin(email: string, address: string): SignInGate {
    const wait = this.retryAfter(email, address);
    return wait > 0 ? { retryAfter: wait } : { attempt: this.begin(email, address) };
  }

  /** Starts a password check for `email` from `address` (after `retryAfter` said 0). */
  begin(email: string, address: string): SignInAttempt {
    bump(this.checkingEmail, email, 1);
    bump(this.checkingAddress, address, 1);
    let open = true;
    const end = () => {
      if (!open) return;
      open = false;
      bump(this.checkingEmail, email, -1);
      bump(this.checkingAddress, address, -1);
    };
    return {
      failed: () => {
        if (!open) return;
        end();
        this.failed(email, address);
      },
      succeeded: () => {
        if (!open) return;
        end();
        this.succeeded(email);
      },
      end,
    };
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
      c = new WindowCounter(Math.ceil(this.o.windowMs / SIGN_IN_BUCKETS), SIGN_IN_BUCKETS);
      map.set(key, c);
    }
    return c;
  }
}

/** Ms until one more sign-in fits under `limit`, counting `checking` attempts in progress as failures. */
export function signInWait(failures: WindowCounter | undefined, checking: number, limit: number, now: number): number {
  const ms = failures?.msUntilRoom(limit, now) ?? 0;
  if (ms > 0) return ms;
  return (failures?.total(now) ?? 0) + checking + 1 > limit ? 1000 : 0;
}

function bump(counts: Map<string, number>, key: string, by: number): void {
  const n = (counts.get(key) ?? 0) + by;
  if (n <= 0) counts.delete(key);
  else counts.set(key, n);
}
