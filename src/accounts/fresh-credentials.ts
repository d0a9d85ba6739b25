import { ApiError } from '../errors/index.ts';

/**
 * Credentials made on another replica a moment ago. Across a fleet a key, session or user created on one replica
 * reaches the others' records within milliseconds (PostgreSQL's NOTIFY, RecordStore.refresh); a request that comes
 * to another replica first must not be refused for it. Likewise on one machine a key the CLI created a moment ago
 * may be newer than the LMDB read snapshot the server still reads from. `orRefreshed` runs `attempt`; when it fails
 * with a 401 and the store can be behind (`refresh` given), it waits once for the store to catch up (PostgreSQL: one
 * query in flight for every such request; LMDB: a fresh snapshot) and runs `attempt` again, whose answer, or 401,
 * is final. A hit stays synchronous.
 */
export function orRefreshed<T>(attempt: () => T, refresh: (() => Promise<void>) | undefined): T | Promise<T> {
  try {
    return attempt();
  } catch (err) {
    if (refresh === undefined || !(err instanceof ApiError) || err.status !== 401) throw err;
    return refresh().then(attempt);
  }
}

/** `fn(value)` now when `value` is at hand, else once it resolves: a synchronous caller stays synchronous. */
export function whenReady<T, R>(value: T | Promise<T>, fn: (v: T) => R): R | Promise<Awaited<R>> {
  return value instanceof Promise ? (value.then(fn) as Promise<Awaited<R>>) : fn(value);
}
