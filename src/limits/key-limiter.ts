import { type ApiError, keyRateLimited } from '../errors/index.ts';
import type { KeyLimits } from '../store/database.ts';
import { WindowCounter } from './window-counter.ts';

/** Response headers as name/value pairs (lower-case names). */
export type HeaderPairs = Array<[string, string]>;

/** A request admitted under its key's limits. `release` is idempotent and must run on every path (finally). */
export interface KeyLease {
  /** Counts the request's tokens (prompt + completion, from its usage) against the key's tokens per minute. */
  recordTokens(tokens: number): void;
  /** Gives the concurrency slot back. */
  release(): void;
}

export type KeyAdmission =
  { ok: true; lease: KeyLease; headers: HeaderPairs } | { ok: false; error: ApiError; headers: HeaderPairs };

const WINDOW_BUCKET_MS = 1000;
const WINDOW_BUCKETS = 60;

/** A key's figures: requests and tokens in the last minute (sliding), requests in progress. */
export interface KeyState {
  requests: WindowCounter;
  tokens: WindowCounter;
  inFlight: number;
}

/**
 * Per-key limits behind one interface: this in-memory KeyLimiter (one process) and FleetKeyLimiter (a fleet of
 * replicas counting in PostgreSQL, limits/fleet-key-limiter.ts). `admit` decides on one request; `peek` gives the
 * headers of a read that takes no request, synchronously.
 */
export interface KeyLimiting {
  admit(keyId: string, limits: KeyLimits): KeyAdmission | Promise<KeyAdmission>;
  peek(keyId: string, limits: KeyLimits): HeaderPairs;
}

const NO_LEASE: KeyLease = { recordTokens: () => {}, release: () => {} };
export const UNLIMITED: KeyAdmission = Object.freeze({ ok: true, lease: NO_LEASE, headers: [] });

/** Whether `limits` sets none of the three limits (such a key is never counted). */
export const unlimited = (limits: KeyLimits): boolean =>
  limits.requestsPerMinute === null && limits.tokensPerMinute === null && limits.maxConcurrent === null;

/** WindowCounter shape of the per-key windows: 60 one-second buckets. */
export const newKeyWindow = (): WindowCounter => new WindowCounter(WINDOW_BUCKET_MS, WINDOW_BUCKETS);

/** OpenAI's reset durations: `17ms`, `42s`, `1m0s`. */
export function formatReset(ms: number): string {
  if (ms <= 0) return '0s';
  if (ms < 1000) return `${Math.ceil(ms)}ms`;
  const s = Math.ceil(ms / 1000);
  return s < 60 ? `${s}s` : `${Math.floor(s / 60)}m${s % 60}s`;
}

const seconds = (ms: number) => Math.max(1, Math.ceil(ms / 1000));

/**
 * Per-key limits of the shared endpoint (contract "Per-key limits"), in memory: requests and tokens per
 * minute in 60 one-second buckets (sliding), and requests in progress. Each key has its own state, so one
 * key at its limit never holds up another. Keys without limits cost nothing (no state, no headers).
 * Tokens are counted when a request finishes (from its usage), so requests running at once may together
 * pass the tokens limit; the next request then waits. Main thread only.
 */
export class KeyLimiter implements KeyLimiting {
  private readonly states = new Map<string, KeyState>();

  /** Decides on one request of `keyId`; the headers go on its answer whatever the outcome. */
  admit(keyId: string, limits: KeyLimits, now = Date.now()): KeyAdmission {
    if (unlimited(limits)) return UNLIMITED;
    const st = this.state(keyId);
    const error = keyRefusal(keyId, limits, st, now);
    if (error !== null) return { ok: false, error, headers: keyLimitHeaders(st, limits, now) };
    st.requests.add(1, now);
    st.inFlight++;
    let released = false;
    const lease: KeyLease = {
      recordTokens: (tokens) => {
        if (tokens > 0) st.tokens.add(tokens, Date.now());
      },
      release: () => {
        if (released) return;
        released = true;
        st.inFlight--;
      },
    };
    return { ok: true, lease, headers: keyLimitHeaders(st, limits, now) };
  }

  /** The headers a key's answer carries without taking a request (GET /models). */
  peek(keyId: string, limits: KeyLimits, now = Date.now()): HeaderPairs {
    if (unlimited(limits)) return [];
    return keyLimitHeaders(this.state(keyId), limits, now);
  }

  /** Requests of `keyId` in progress (for tests and the dashboard). */
  inFlight(keyId: string): number {
    return this.states.get(keyId)?.inFlight ?? 0;
  }

  private state(keyId: string): KeyState {
    let st = this.states.get(keyId);
    if (st === undefined) {
      st = { requests: newKeyWindow(), tokens: newKeyWindow(), inFlight: 0 };
      this.states.set(keyId, st);
    }
    return st;
  }
}

/** The refusal of one more request of `keyId` in state `st` (concurrency first, then requests, then tokens), or null. */
export function keyRefusal(keyId: string, limits: KeyLimits, st: KeyState, now: number): ApiError | null {
  const { requestsPerMinute: rpm, tokensPerMinute: tpm, maxConcurrent: conc } = limits;
  if (conc !== null && st.inFlight >= conc) {
    return keyRateLimited(
      `Rate limit reached for key ${keyId}: ${conc} concurrent requests; retry when one finishes`,
      'limits.maxConcurrent',
      'concurrent',
      1,
    );
  }
  return (
    windowRefusal(keyId, rpm, st.requests, now, 'requests', 'limits.requestsPerMinute') ??
    windowRefusal(keyId, tpm, st.tokens, now, 'tokens', 'limits.tokensPerMinute')
  );
}

/** The refusal of one more request by a per-minute window (requests or tokens) at `limit` (null: none), or null. */
function windowRefusal(
  keyId: string,
  limit: number | null,
  window: WindowCounter,
  now: number,
  kind: 'requests' | 'tokens',
  param: string,
): ApiError | null {
  if (limit === null || !(window.total(now) + 1 > limit)) return null;
  const wait = seconds(window.msUntilRoom(limit, now));
  return keyRateLimited(
    `Rate limit reached for key ${keyId}: ${limit} ${kind} per minute; retry in ${wait} s`,
    param,
    kind,
    wait,
  );
}

/** The x-ratelimit-* headers of a key in state `st`. */
export function keyLimitHeaders(st: KeyState, limits: KeyLimits, now: number): HeaderPairs {
  const h: HeaderPairs = [];
  const trio = (kind: string, limit: number, counter: WindowCounter) => {
    h.push([`x-ratelimit-limit-${kind}`, String(limit)]);
    h.push([`x-ratelimit-remaining-${kind}`, String(Math.max(0, limit - counter.total(now)))]);
    h.push([`x-ratelimit-reset-${kind}`, formatReset(counter.msUntilEmpty(now))]);
  };
  if (limits.requestsPerMinute !== null) trio('requests', limits.requestsPerMinute, st.requests);
  if (limits.tokensPerMinute !== null) trio('tokens', limits.tokensPerMinute, st.tokens);
  if (limits.maxConcurrent !== null) {
    h.push(['x-ratelimit-limit-concurrent', String(limits.maxConcurrent)]);
    h.push(['x-ratelimit-remaining-concurrent', String(Math.max(0, limits.maxConcurrent - st.inFlight))]);
  }
  return h;
}
