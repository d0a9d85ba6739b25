import type pg from 'pg';
import { storeUnavailable } from '../errors/index.ts';
import type { Logger } from '../log/logger.ts';

/**
 * Runs `body` in one PostgreSQL transaction that first takes transaction-scoped advisory locks on `locks` (in the
 * order given: callers always name their kinds of subject in one order, so two transactions never deadlock) and
 * reads the database's clock in the same statement (`nowMs`, one clock for every replica). The fleet limiters'
 * read-decide-count step, atomic across replicas. A failure anywhere rolls back, is logged as `<what> not checked`
 * with `fields`, and becomes 503 store_unavailable; the client goes back to the pool either way.
 */
export async function inAdvisoryLockTransaction<T>(
  pool: pg.Pool,
  locks: readonly string[],
  log: Logger,
  what: string,
  fields: Record<string, unknown>,
  body: (client: pg.PoolClient, nowMs: number) => Promise<T>,
): Promise<T> {
  let client: pg.PoolClient;
  try {
    client = await pool.connect();
  } catch {
    throw storeUnavailable();
  }
  try {
    await client.query('BEGIN');
    const lockCalls = locks.map((_, i) => `pg_advisory_xact_lock(hashtextextended($${i + 1}, 0))`).join(', ');
    const clock = await client.query<{ now_ms: string }>(
      `SELECT ${lockCalls}, (extract(epoch FROM clock_timestamp()) * 1000)::bigint AS now_ms`,
      [...locks],
    );
    const result = await body(client, Number(clock.rows[0]!.now_ms));
    await client.query('COMMIT');
    return result;
  } catch (err) {
    await client.query('ROLLBACK').catch(() => {});
    log.warn(`${what} not checked`, { ...fields, error: err instanceof Error ? err.message : String(err) });
    throw storeUnavailable();
  } finally {
    client.release();
  }
}
