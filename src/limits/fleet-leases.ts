import { randomUUID } from 'node:crypto';
import type pg from 'pg';
import type { Logger } from '../log/logger.ts';

/**
 * This replica's leases in PostgreSQL (table fleet_leases, migration 0002): rows for what it has in progress (a
 * limited key's request, a password check) that count for the whole fleet while they live. Every `renewMs` it
 * pushes their expiry `ttlMs` ahead in one statement; a replica that dies (SIGKILL, its machine gone) stops
 * renewing, so its rows stop counting at most `ttlMs` after its last renewal: with the defaults (6 s, every 1.5 s)
 * within 6 s of its death. Once a minute it also deletes what no longer counts anywhere (expired leases, usage and
 * failure rows past their windows), for every replica. A renewal that fails (database down) is logged and retried
 * at the next tick. `close` stops the timer and deletes this replica's leases.
 */
export interface FleetLeaseOptions {
  ttlMs?: number;
  renewMs?: number;
  /** How often the tables are swept; 0 = never (tests). */
  sweepMs?: number;
}

export const DEFAULT_LEASE_OPTIONS = {
  ttlMs: 6_000,
  renewMs: 1_500,
  sweepMs: 60_000,
} as const satisfies Required<FleetLeaseOptions>;

export class FleetLeases {
  readonly replicaId = randomUUID();
  readonly ttlMs: number;
  private readonly renewTimer: NodeJS.Timeout;
  private readonly sweepTimer: NodeJS.Timeout | undefined;
  private closed = false;

  constructor(
    readonly pool: pg.Pool,
    private readonly log: Logger,
    options: FleetLeaseOptions = {},
  ) {
    const o = { ...DEFAULT_LEASE_OPTIONS, ...options };
    if (!(o.renewMs > 0 && o.ttlMs > o.renewMs)) throw new TypeError('fleet leases: ttlMs must exceed renewMs > 0');
    this.ttlMs = o.ttlMs;
    this.renewTimer = setInterval(() => void this.renew(), o.renewMs);
    this.renewTimer.unref();
    if (o.sweepMs > 0) {
      this.sweepTimer = setInterval(() => void this.sweep(), o.sweepMs);
      this.sweepTimer.unref();
    }
  }

  /** SQL for the expiry of a lease taken now: `clock_timestamp() + ttl` (the database's clock, shared by the fleet). */
  get expirySql(): string {
    return `clock_timestamp() + interval '${this.ttlMs} milliseconds'`;
  }

  async renew(): Promise<void> {
    if (this.closed) return;
    try {
      await this.pool.query(`UPDATE fleet_leases SET expires_at = ${this.expirySql} WHERE replica_id = $1`, [
        this.replicaId,
      ]);
    } catch (err) {
      this.log.warn('fleet leases not renewed', { error: err instanceof Error ? err.message : String(err) });
    }
  }

  private async sweep(): Promise<void> {
    try {
      await this.pool.query(`DELETE FROM fleet_leases WHERE expires_at < clock_timestamp() - interval '1 minute'`);
      await this.pool.query(
        `DELETE FROM fleet_key_usage WHERE second < floor(extract(epoch FROM clock_timestamp()))::bigint - 120`,
      );
      await this.pool.query(
        `DELETE FROM fleet_sign_in_failures WHERE minute < floor(extract(epoch FROM clock_timestamp()) / 60)::bigint - 60`,
      );
    } catch (err) {
      this.log.warn('fleet limit tables not swept', { error: err instanceof Error ? err.message : String(err) });
    }
  }

  /** Stops renewing, as a replica that died would (tests); its leases expire. */
  halt(): void {
    this.closed = true;
    clearInterval(this.renewTimer);
    if (this.sweepTimer) clearInterval(this.sweepTimer);
  }

  /** Stops renewing and gives back every lease of this replica at once. */
  async close(): Promise<void> {
    if (this.closed) return;
    this.halt();
    await this.pool.query('DELETE FROM fleet_leases WHERE replica_id = $1', [this.replicaId]).catch(() => {});
  }
}
