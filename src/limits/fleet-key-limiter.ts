import { randomUUID } from 'node:crypto';
import type pg from 'pg';
import type { Logger } from '../log/logger.ts';
import type { KeyLimits } from '../store/database.ts';
import { inAdvisoryLockTransaction } from './advisory-lock-transaction.ts';
import type { FleetLeases } from './fleet-leases.ts';
import {
  type HeaderPairs,
  type KeyAdmission,
  type KeyLimiting,
  type KeyState,
  keyLimitHeaders,
  keyRefusal,
  newKeyWindow,
  UNLIMITED,
  unlimited,
} from './key-limiter.ts';

/**
 * Per-key limits counted for the whole fleet in PostgreSQL (contract "Past one machine": a limited key's replicas
 * together admit at most its requests per minute, tokens per minute and concurrency). The same decision as the
 * in-memory KeyLimiter (keyRefusal, keyLimitHeaders), on figures read from the database:
 * - requests and tokens per key and second of the database's clock (fleet_key_usage); a sliding minute is the last
 *   60 rows;
 * - requests in progress as leases (fleet_leases, kind 'key') that this replica renews (FleetLeases): a replica
 *   that dies gives its concurrency back when they expire (within the lease time, 6 s).
 * One admission is one transaction under a per-key advisory lock (read, decide, count, lease), so replicas deciding
 * at once on one key are serialised and never pass its limits together. Tokens are counted when a request finishes
 * (as in memory: requests running at once may together pass the tokens limit; the next one then waits).
 * A key without limits costs no database round trip. The database unreachable: a limited key's request is refused
 * 503 store_unavailable (never admitted uncounted). `peek` (a read: GET /models) answers from the figures this
 * replica read last for the key, synchronously; a key it never read shows its full limits.
 */
export class FleetKeyLimiter implements KeyLimiting {
  /** The figures read at this replica's last admission of each key (for `peek`), with the time they were read. */
  private readonly lastSeen = new Map<string, { st: KeyState; at: number }>();
  private readonly pool: pg.Pool;

  constructor(
    private readonly leases: FleetLeases,
    private readonly log: Logger,
  ) {
    this.pool = leases.pool;
  }

  async admit(keyId: string, limits: KeyLimits): Promise<KeyAdmission> {
    if (unlimited(limits)) return UNLIMITED;
    const leaseId = randomUUID();
    const outcome = await inAdvisoryLockTransaction(
      this.pool,
      [`hearth-key-limit:${keyId}`],
      this.log,
      'fleet key limit',
      { keyId },
      async (client, now) => {
        const st = await this.read(client, keyId, now);
        const admitted = keyRefusal(keyId, limits, st, now) === null;
        if (admitted) {
          await client.query(
            `WITH counted AS (
             INSERT INTO fleet_key_usage (key_id, second, requests) VALUES ($1, $2, 1)
             ON CONFLICT (key_id, second) DO UPDATE SET requests = fleet_key_usage.requests + 1)
           INSERT INTO fleet_leases (lease_id, kind, subject, replica_id, expires_at)
           SELECT $3, 'key', $1, $4, ${this.leases.expirySql} WHERE $5::boolean`,
            [keyId, Math.floor(now / 1000), leaseId, this.leases.replicaId, limits.maxConcurrent !== null],
          );
          st.requests.add(1, now);
          st.inFlight++;
        }
        return { st, now, admitted };
      },
    );
    const { st, now } = outcome;
    this.lastSeen.set(keyId, { st, at: now });
    const headers = keyLimitHeaders(st, limits, now);
    if (!outcome.admitted) return { ok: false, error: keyRefusal(keyId, limits, st, now)!, headers };
    let released = false;
    return {
      ok: true,
      headers,
      lease: {
        recordTokens: (tokens) => {
          if (tokens <= 0) return;
          this.pool
            .query(
              `INSERT INTO fleet_key_usage (key_id, second, tokens) VALUES ($1, floor(extract(epoch FROM clock_timestamp()))::bigint, $2)
               ON CONFLICT (key_id, second) DO UPDATE SET tokens = fleet_key_usage.tokens + $2`,
              [keyId, tokens],
            )
            .catch((err: unknown) =>
              this.log.warn('fleet key tokens not counted', {
                keyId,
                tokens,
                error: err instanceof Error ? err.message : String(err),
              }),
            );
        },
        release: () => {
          if (released || limits.maxConcurrent === null) return;
          released = true;
          // A lease not deleted (database down) expires with the lease time.
          this.pool.query(`DELETE FROM fleet_leases WHERE lease_id = $1 AND kind = 'key'`, [leaseId]).catch(() => {});
        },
      },
    };
  }

  peek(keyId: string, limits: KeyLimits): HeaderPairs {
    if (unlimited(limits)) return [];
    const seen = this.lastSeen.get(keyId);
    return keyLimitHeaders(
      seen?.st ?? { requests: newKeyWindow(), tokens: newKeyWindow(), inFlight: 0 },
      limits,
      seen?.at ?? Date.now(),
    );
  }

  /** The key's figures at `now` (ms of the database's clock): its last minute's rows and its live leases. */
  private async read(client: pg.PoolClient, keyId: string, now: number): Promise<KeyState> {
    const second = Math.floor(now / 1000);
    const r = await client.query<{ in_flight: string; buckets: Array<[number, number, number]> }>(
      `SELECT (SELECT count(*) FROM fleet_leases WHERE kind = 'key' AND subject = $1 AND expires_at >= clock_timestamp()) AS in_flight,
              coalesce((SELECT json_agg(json_build_array(second, requests, tokens)) FROM fleet_key_usage WHERE key_id = $1 AND second > $2), '[]'::json) AS buckets`,
      [keyId, second - 60],
    );
    const row = r.rows[0]!;
    const st: KeyState = { requests: newKeyWindow(), tokens: newKeyWindow(), inFlight: Number(row.in_flight) };
    for (const [s, requests, tokens] of row.buckets) {
      if (requests > 0) st.requests.add(requests, s * 1000);
      if (tokens > 0) st.tokens.add(Number(tokens), s * 1000);
    }
    return st;
  }
}
