import { createHash, randomUUID } from 'node:crypto';
import type pg from 'pg';
import type { Logger } from '../log/logger.ts';
import { inAdvisoryLockTransaction } from './advisory-lock-transaction.ts';
import type { FleetLeases } from './fleet-leases.ts';
import {
  DEFAULT_SIGN_IN_LIMITS,
  SIGN_IN_BUCKETS,
  type SignInAttempt,
  type SignInGate,
  type SignInLimiting,
  signInWait,
} from './sign-in-limiter.ts';
import { WindowCounter } from './window-counter.ts';

/**
 * The sign-in limiter counted for the whole fleet in PostgreSQL: the in-memory SignInLimiter's rules (failed
 * sign-ins per email and per client address in a sliding 15-minute window, a check in progress counting as a
 * failure until it ends, a success clearing its email), on figures every replica shares:
 * - failures per email / address and bucket of the database's clock (fleet_sign_in_failures), keyed by SHA-256;
 * - checks in progress as leases (fleet_leases, kinds 'sign-in-email' / 'sign-in-address') renewed by this replica
 *   (FleetLeases), so a replica that dies mid-check stops holding its place when they expire.
 * `tryBegin` is one transaction under advisory locks on the email and the address (always in that order): checks
 * started at once on several replicas are serialised, so guesses sent to the whole fleet at once cannot pass the
 * limit together. An attempt's outcome is one statement (the check's leases deleted and its failure counted
 * together), sent without waiting; one lost to a database failure is logged (its leases expire). The database
 * unreachable: sign-in answers 503 store_unavailable.
 */
export class FleetSignInLimiter implements SignInLimiting {
  private readonly pool: pg.Pool;
  private readonly bucketMs: number;

  constructor(
    private readonly leases: FleetLeases,
    private readonly log: Logger,
    private readonly o: { perEmail: number; perAddress: number; windowMs: number } = DEFAULT_SIGN_IN_LIMITS,
  ) {
    this.pool = leases.pool;
    this.bucketMs = Math.ceil(o.windowMs / SIGN_IN_BUCKETS);
  }

  async tryBegin(email: string, address: string): Promise<SignInGate> {
    const e = digest(email);
    const a = digest(address);
    const checkId = randomUUID();
    const locks = [`hearth-sign-in:email:${e}`, `hearth-sign-in:address:${a}`];
    return inAdvisoryLockTransaction(
      this.pool,
      locks,
      this.log,
      'fleet sign-in limit',
      {},
      async (client, now): Promise<SignInGate> => {
        const bucket = Math.floor(now / this.bucketMs);
        const r = await client.query<{ kind: string; buckets: Array<[number, number]> | null; checking: string }>(
          `SELECT k.kind,
                (SELECT json_agg(json_build_array(minute, failures)) FROM fleet_sign_in_failures f WHERE f.kind = k.kind AND f.subject = k.subject AND f.minute > $3) AS buckets,
                (SELECT count(*) FROM fleet_leases l WHERE l.kind = 'sign-in-' || k.kind AND l.subject = k.subject AND l.expires_at >= clock_timestamp()) AS checking
         FROM (VALUES ('email', $1), ('address', $2)) AS k(kind, subject)`,
          [e, a, bucket - SIGN_IN_BUCKETS],
        );
        let ms = 0;
        for (const row of r.rows) {
          const failures = new WindowCounter(this.bucketMs, SIGN_IN_BUCKETS);
          for (const [b, n] of row.buckets ?? []) failures.add(n, b * this.bucketMs);
          ms = Math.max(
            ms,
            signInWait(failures, Number(row.checking), row.kind === 'email' ? this.o.perEmail : this.o.perAddress, now),
          );
        }
        if (ms > 0) return { retryAfter: Math.max(1, Math.ceil(ms / 1000)) };
        await client.query(
          `INSERT INTO fleet_leases (lease_id, kind, subject, replica_id, expires_at)
         VALUES ($1, 'sign-in-email', $2, $4, ${this.leases.expirySql}), ($1, 'sign-in-address', $3, $4, ${this.leases.expirySql})`,
          [checkId, e, a, this.leases.replicaId],
        );
        return { attempt: this.attempt(checkId, e, a) };
      },
    );
  }

  private attempt(checkId: string, e: string, a: string): SignInAttempt {
    let open = true;
    const run = (what: string, sql: string, params: unknown[]) => {
      if (!open) return;
      open = false;
      this.pool.query(sql, params).catch((err: unknown) =>
        this.log.warn(`fleet sign-in ${what} not recorded`, {
          error: err instanceof Error ? err.message : String(err),
        }),
      );
    };
    return {
      failed: () =>
        run(
          'failure',
          `WITH done AS (DELETE FROM fleet_leases WHERE lease_id = $1)
           INSERT INTO fleet_sign_in_failures (kind, subject, minute, failures)
           SELECT kind, subject, floor(extract(epoch FROM clock_timestamp()) * 1000 / $4)::bigint, 1 FROM (VALUES ('email', $2), ('address', $3)) AS k(kind, subject)
           ON CONFLICT (kind, subject, minute) DO UPDATE SET failures = fleet_sign_in_failures.failures + 1`,
          [checkId, e, a, this.bucketMs],
        ),
      succeeded: () =>
        run(
          'success',
          `WITH done AS (DELETE FROM fleet_leases WHERE lease_id = $1) DELETE FROM fleet_sign_in_failures WHERE kind = 'email' AND subject = $2`,
          [checkId, e],
        ),
      end: () => run('end', 'DELETE FROM fleet_leases WHERE lease_id = $1', [checkId]),
    };
  }
}

/** An email or address as the tables keep it: its SHA-256, never the value. */
function digest(value: string): string {
  return createHash('sha256').update(value).digest('hex');
}
