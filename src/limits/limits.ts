import pg from 'pg';
import type { Logger } from '../log/logger.ts';
import { FleetKeyLimiter } from './fleet-key-limiter.ts';
import { FleetLeases } from './fleet-leases.ts';
import { FleetSignInLimiter } from './fleet-sign-in-limiter.ts';
import { KeyLimiter, type KeyLimiting } from './key-limiter.ts';
import { SignInLimiter, type SignInLimiting } from './sign-in-limiter.ts';

/** The per-key limits and the sign-in limiter a server uses, and how to let them go. */
export interface Limits {
  keys: KeyLimiting;
  signIns: SignInLimiting;
  close(): Promise<void>;
}

/**
 * In memory (one process) without a database URL; with one, counted for the whole fleet in PostgreSQL (its tables
 * come with the records' migrations, 0002_fleet_limits.sql, applied when the record store opens) over a small pool
 * of its own, so that limits never wait behind record writes.
 */
export function openLimits(databaseUrl: string | undefined, log: Logger): Limits {
  if (databaseUrl === undefined) return { keys: new KeyLimiter(), signIns: new SignInLimiter(), close: async () => {} };
  const pool = new pg.Pool({
    connectionString: databaseUrl,
    max: 8,
    connectionTimeoutMillis: 2_000,
    query_timeout: 2_000,
    idleTimeoutMillis: 30_000,
    allowExitOnIdle: true,
  });
  pool.on('error', (err) => log.warn('fleet limits: a database connection failed', { error: err.message })); // never an unhandled 'error'
  const leases = new FleetLeases(pool, log);
  return {
    keys: new FleetKeyLimiter(leases, log),
    signIns: new FleetSignInLimiter(leases, log),
    async close() {
      await leases.close();
      await pool.end().catch(() => {});
    },
  };
}
