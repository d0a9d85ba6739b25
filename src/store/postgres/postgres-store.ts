import pg from 'pg';
import { ApiError, storeUnavailable } from '../../errors/index.ts';
import type { RecordKey, RecordStore, RecordTables } from '../record-store.ts';
import type { StoreHealth } from '../store-health.ts';
import { applyChangeRows, ReloadNeeded } from './change-rows.ts';
import { encodeKey } from './key-order.ts';
import { migrate } from './migrations.ts';
import {
  type Capture,
  CHANGES_CHANNEL,
  type ChangeRow,
  type PostgresStoreOptions,
  type StoreLog,
  TABLE_NAMES,
  type TableName,
  WRITE_LOCK,
  type Write,
} from './postgres-store-types.ts';
import { PostgresTable } from './postgres-table.ts';
import { deepFreeze } from '../deep-freeze.ts';
import { CHANGES_SQL, PRUNE_SQL, UPSERT_SQL } from './records-sql.ts';
import { MirrorTable } from './mirror-table.ts';
import { describe, StoreAvailability } from './store-availability.ts';

export {
  CHANGES_CHANNEL,
  type PostgresStoreOptions,
  type StoreLog,
  TABLE_NAMES,
  type TableName,
  WRITE_LOCK,
} from './postgres-store-types.ts';

/**
 * The RecordStore (record-store.ts) of a fleet: the records in PostgreSQL, one `records` table (migration
 * 0001), and in every replica an in-memory mirror of all of them that the synchronous reads answer from.
 *
 * - Start: migrations under a lock, then the whole table is loaded into the mirror.
 * - Writes: `transaction(fn)` takes the fleet-wide write lock (pg_advisory_xact_lock) in a PostgreSQL
 *   transaction, brings the mirror up to date under it, runs `fn` against the mirror (its own writes visible
 *   to its own reads, and to nobody else while it runs), writes the puts and removes with the next values of
 *   one global sequence, NOTIFYs, commits, and only then applies them to the mirror and resolves. So
 *   check-then-write is atomic across the fleet, and a resolved write is durable. A throw in `fn` discards
 *   its writes. Transactions of one replica run one at a time, in call order.
 * - `transactionSync(fn)` cannot wait for the network in Node: its writes are applied to this replica's mirror
 *   before it returns (its next read, here, sees them) and committed in the background, in order with the
 *   other transactions; if that commit fails (database unreachable) the writes are taken back from the mirror
 *   and the failure is logged. Its check-then-write is atomic on this replica only. Only stored responses use it.
 * - Changes of other replicas: each LISTENs on `hearth_records` and catches up ("every row with seq > the last
 *   seen", tombstones included) on each NOTIFY, and every `pollMs` (500 ms) when none came, so a revoked key,
 *   a signed-out session or a removed user is refused everywhere well within a second.
 * - Database unreachable: every query is bounded by `queryTimeoutMs`; a write answers store_unavailable
 *   (503 + Retry-After) and is not made (at once while the store is known down, until a poll succeeds); reads keep answering from the mirror (what was committed until the
 *   database went away); `health()` says why; polling goes on, and the first answer catches the mirror up.
 */
export class PostgresStore implements RecordStore {
  readonly dbs: RecordTables;
  private readonly mirror: Record<TableName, MirrorTable>;
  private readonly pool: pg.Pool;
  private readonly log: StoreLog;
  private readonly pollMs: number;
  private readonly tombstoneTtlMs: number;
  private readonly timeoutMs: number;
  private lastSeen = 0;
  private capture: Capture | null = null;
  private queue: Promise<unknown> = Promise.resolve();
  private lastSyncCommit: Promise<void> = Promise.resolve();
  /** The catch-up queued and not yet started (its completion: its failure or undefined), which callers join. */
  private queuedCatchUp: Promise<unknown> | null = null;
  private listener: pg.Client | null = null;
  private listenerConnecting = false;
  private poller: NodeJS.Timeout | null = null;
  private pruner: NodeJS.Timeout | null = null;
  private closed = false;
  private readonly availability: StoreAvailability;

  private constructor(
    private readonly url: string,
    private readonly options: PostgresStoreOptions,
  ) {
    this.log = options.log ?? (() => {});
    this.availability = new StoreAvailability(this.log, options.onHealth, () => this.closed);
    this.pollMs = options.pollMs ?? 500;
    this.tombstoneTtlMs = options.tombstoneTtlMs ?? 3_600_000;
    const timeout = (this.timeoutMs = options.queryTimeoutMs ?? 5_000);
    this.pool = new pg.Pool({
      connectionString: url,
      max: 4,
      connectionTimeoutMillis: timeout,
      query_timeout: timeout,
      idleTimeoutMillis: 30_000,
      allowExitOnIdle: true,
    });
    this.pool.on('error', (err) => this.down(err)); // an idle client lost its connection: never an unhandled 'error'
    this.mirror = Object.fromEntries(TABLE_NAMES.map((t) => [t, new MirrorTable()])) as Record<TableName, MirrorTable>;
    this.dbs = Object.fromEntries(
      TABLE_NAMES.map((t) => [t, new PostgresTable(this, t, this.mirror[t])]),
    ) as unknown as RecordTables;
  }

  /** Connects, migrates (under the migration lock), loads every record, then listens and polls for changes. */
  static async open(url: string, options: PostgresStoreOptions = {}): Promise<PostgresStore> {
    const store = new PostgresStore(url, options);
    try {
      const client = await store.pool.connect();
      try {
        await migrate(client);
        store.apply((await client.query<ChangeRow>(CHANGES_SQL, [-1])).rows, true);
      } finally {
        client.release();
      }
    } catch (err) {
      await store.pool.end().catch(() => {});
      throw new Error(`cannot open the records database: ${describe(err)}`);
    }
    store.poller = setInterval(() => store.tick(), store.pollMs).unref();
    store.pruner = setInterval(
      () => void store.pruneTombstones().catch(() => {}),
      Math.max(60_000, store.tombstoneTtlMs / 6),
    ).unref();
    await store.listen();
    return store;
  }

  /** Whether the database answered the last query, and if not why (for /health and hearth_store_up). */
  health(): StoreHealth {
    return this.availability.state;
  }

  /**
   * One query on the records database beside the record tables (e.g. tables of later migrations: fleet-wide
   * limit counters), on this store's pool, bounded by the query timeout. A database failure marks the store
   * down and throws store_unavailable (503); success marks it up.
   */
  async query<R extends pg.QueryResultRow = pg.QueryResultRow>(
    text: string,
    params: unknown[] = [],
  ): Promise<pg.QueryResult<R>> {
    if (this.closed) throw new Error('the record store is closed');
    try {
      const result = await this.pool.query<R>(text, params);
      this.up();
      return result;
    } catch (err) {
      if (err instanceof pg.DatabaseError && !/^(08|57P)/.test(err.code ?? '')) throw err; // the query's own fault (a bug), not the database's
      throw this.unavailable(err);
    }
  }

  transaction<T>(fn: () => T): Promise<T> {
    if (this.closed) return Promise.reject(new Error('the record store is closed'));
    const queuedAt = Date.now();
    return this.serial(async () => {
      // Known down (the poll says when it is back), or queued behind slow ones for a whole query timeout:
      // answer store_unavailable now rather than add a wait per transaction queued ahead.
      if (!this.availability.state.up || Date.now() - queuedAt > this.timeoutMs) throw storeUnavailable();
      let result!: T;
      await this.locked(async () => {
        try {
          const ran = this.run(fn, true);
          result = ran.result;
          return ran.writes;
        } catch (err) {
          throw new PassThrough(err);
        }
      });
      return result;
    });
  }

  transactionSync<T>(fn: () => T): T {
    if (this.closed) throw new Error('the record store is closed');
    const { result, writes, undo } = this.run(fn, false);
    if (writes.length > 0) {
      const commit = this.serial(() => this.locked(async () => writes)).catch((err: unknown) => {
        // Take back what was applied (to the value before the first write of each key), where nothing newer
        // replaced it since.
        const original = new Map<string, unknown>();
        for (const u of undo) {
          const id = `${u.tbl}\u0000${encodeKey(u.key)}`;
          if (!original.has(id)) original.set(id, u.before);
        }
        for (const w of writes) {
          if (this.mirror[w.tbl].get(w.key) === w.value)
            this.mirror[w.tbl].set(w.key, original.get(`${w.tbl}\u0000${encodeKey(w.key)}`));
        }
        this.log('error', 'a synchronous record write could not be committed and was undone', {
          error: describe(err),
          records: writes.length,
        });
        throw storeUnavailable();
      });
      commit.catch(() => {}); // its failure is logged above; syncCommitted() hands it to whoever asks
      this.lastSyncCommit = commit;
    }
    return result;
  }

  /**
   * RecordStore.syncCommitted: the commit of the last transactionSync that wrote something (transactions commit in
   * call order, so every earlier one has run too); rejects with store_unavailable when it failed and was undone.
   */
  syncCommitted(): Promise<void> {
    return this.lastSyncCommit;
  }

  /** Stages a write of the running transaction (PostgresTable calls it); returns whether a record was there. */
  stage(tbl: TableName, key: RecordKey, value: unknown): boolean {
    const c = this.capture;
    if (!c) throw new Error('stage outside a transaction');
    const json = value === undefined ? null : JSON.stringify(value);
    if (json === undefined) throw new Error(`refusing a record that is not JSON in ${tbl}`);
    const stored = json === null ? undefined : deepFreeze(JSON.parse(json) as unknown);
    const before = this.mirror[tbl].set(key, stored);
    c.undo.push({ tbl, key, before });
    c.writes.set(`${tbl}\u0000${encodeKey(key)}`, { tbl, key, value: stored, json });
    return before !== undefined;
  }

  /** Whether a transaction's `fn` is running (a table's put/remove then joins it). */
  get inTransaction(): boolean {
    return this.capture !== null;
  }

  async close(): Promise<void> {
    if (this.closed) return;
    this.closed = true;
    if (this.poller) clearInterval(this.poller);
    if (this.pruner) clearInterval(this.pruner);
    await this.queue.catch(() => {});
    const listener = this.listener;
    this.listener = null;
    await listener?.end().catch(() => {});
    await this.pool.end().catch(() => {});
  }

  /**
   * Runs `fn` with its writes staged on the mirror. `undoAfter`: the mirror is put back as it was once `fn`
   * returns (or throws), so other readers never see uncommitted writes; else (transactionSync) they stay.
   */
  private run<T>(fn: () => T, undoAfter: boolean): { result: T; writes: Write[]; undo: Capture['undo'] } {
    if (this.capture) throw new Error('a record transaction cannot start inside another one');
    const capture: Capture = { writes: new Map(), undo: [] };
    this.capture = capture;
    let failed = true;
    try {
      const result = fn();
      failed = false;
      return { result, writes: [...capture.writes.values()], undo: capture.undo };
    } finally {
      this.capture = null;
      if (undoAfter || failed) for (const u of capture.undo.reverse()) this.mirror[u.tbl].set(u.key, u.before);
    }
  }

  /**
   * One PostgreSQL transaction under the fleet-wide write lock: catches the mirror up, runs `work`, writes
   * what it returns (each write stamped with the next seq), NOTIFYs, commits, and only then applies the writes
   * to the mirror. A database failure becomes store_unavailable; an error of `work` itself (PassThrough) rolls
   * back and is rethrown as it was.
   */
  private async locked(work: (client: pg.PoolClient) => Promise<Write[]>): Promise<void> {
    let client: pg.PoolClient;
    try {
      client = await this.pool.connect();
    } catch (err) {
      throw this.unavailable(err);
    }
    let broken: Error | undefined;
    try {
      await client.query(`BEGIN; SELECT pg_advisory_xact_lock(${WRITE_LOCK})`);
      await this.catchUpOn(client);
      let writes: Write[];
      try {
        writes = await work(client);
      } catch (err) {
        await client
          .query('ROLLBACK')
          .catch((e: unknown) => void (broken = e instanceof Error ? e : new Error(String(e))));
        throw err;
      }
      let top = 0;
      if (writes.length > 0) {
        const res = await client.query<{ seq: string }>(UPSERT_SQL, [
          writes.map((w) => w.tbl),
          writes.map((w) => encodeKey(w.key)),
          writes.map((w) => w.json),
        ]);
        for (const r of res.rows) top = Math.max(top, Number(r.seq));
      }
      await client.query(top > 0 ? `SELECT pg_notify('${CHANGES_CHANNEL}', '${top}'); COMMIT` : 'COMMIT');
      for (const w of writes) this.mirror[w.tbl].set(w.key, w.value);
      this.lastSeen = Math.max(this.lastSeen, top);
      this.up();
    } catch (err) {
      if (err instanceof PassThrough) throw err.error;
      broken = err instanceof Error ? err : new Error(String(err));
      throw this.unavailable(err);
    } finally {
      client.release(broken);
    }
  }

  /** Brings the mirror up to date through `db` (reloading everything when this replica is behind the horizon). */
  private async catchUpOn(db: pg.Pool | pg.PoolClient): Promise<void> {
    const rows = (await db.query<ChangeRow>(CHANGES_SQL, [this.lastSeen])).rows;
    try {
      this.apply(rows, false);
    } catch (err) {
      if (!(err instanceof ReloadNeeded)) throw err;
      this.log('warn', 'this replica fell behind the pruned removals: reloading every record');
      this.apply((await db.query<ChangeRow>(CHANGES_SQL, [-1])).rows, true);
    }
  }

  /** Applies change rows to the mirror (change-rows.ts); `full`: they are every record (a load). */
  private apply(rows: ChangeRow[], full: boolean): void {
    this.lastSeen = applyChangeRows(this.mirror, rows, this.lastSeen, full);
  }

  /** RecordStore.refresh: the catch-up queued now (or the one already queued) has run; never rejects. */
  refresh(): Promise<void> {
    return this.catchUp().then(() => {});
  }

  /**
   * RecordStore.current: resolves once a catch-up that started after this call has run, so the mirror holds every
   * commit made anywhere before it (seq order is commit order: every write takes its seq under the fleet-wide
   * lock). Callers waiting together share that one query. Rejects with store_unavailable at once while the
   * database is known down (the poll says when it is back), or when the catch-up fails.
   */
  current(): Promise<void> {
    if (this.closed) return Promise.reject(new Error('the record store is closed'));
    if (!this.availability.state.up) return Promise.reject(storeUnavailable(5, 'read'));
    return this.catchUp().then((failure) => {
      if (failure !== undefined) throw storeUnavailable(5, 'read');
    });
  }

  /**
   * Queues a catch-up of the mirror (on NOTIFY, every pollMs, on refresh and current), in order with the
   * transactions, or joins the one queued and not yet started; resolves to its failure, or undefined (never rejects).
   */
  private catchUp(): Promise<unknown> {
    if (this.closed) return Promise.resolve(new Error('the record store is closed'));
    if (this.queuedCatchUp) return this.queuedCatchUp;
    const run: Promise<unknown> = this.serial(async () => {
      if (this.queuedCatchUp === run) this.queuedCatchUp = null; // a caller from now on needs a later query
      try {
        await this.catchUpOn(this.pool);
        this.up();
        return undefined;
      } catch (err) {
        this.down(err);
        return err;
      }
    });
    this.queuedCatchUp = run;
    return run;
  }

  private tick(): void {
    void this.catchUp();
    if (!this.listener && !this.listenerConnecting) void this.listen();
  }

  /** A dedicated connection LISTENing for commits; on loss, tick() connects a new one. */
  private async listen(): Promise<void> {
    if (this.closed) return;
    this.listenerConnecting = true;
    const client = new pg.Client({
      connectionString: this.url,
      connectionTimeoutMillis: this.options.queryTimeoutMs ?? 5_000,
      query_timeout: this.options.queryTimeoutMs ?? 5_000,
    });
    const lost = (err?: unknown) => {
      if (this.listener === client) this.listener = null;
      if (err) this.down(err);
      void client.end().catch(() => {});
    };
    client.on('error', lost);
    client.on('end', () => lost());
    client.on('notification', () => void this.catchUp());
    try {
      await client.connect();
      await client.query(`LISTEN ${CHANGES_CHANNEL}`);
      if (this.closed) await client.end();
      else {
        this.listener = client;
        void this.catchUp(); // whatever was committed while no one listened
      }
    } catch (err) {
      lost(err);
    } finally {
      this.listenerConnecting = false;
    }
  }

  /** Removes tombstones older than tombstoneTtlMs and moves the horizon past them (under the write lock). */
  private pruneTombstones(): Promise<void> {
    return this.serial(() =>
      this.locked(async (client) => {
        await client.query(PRUNE_SQL, [`${Math.round(this.tombstoneTtlMs / 1000)} seconds`]);
        return [];
      }),
    );
  }

  private serial<T>(op: () => Promise<T>): Promise<T> {
    const next = this.queue.then(op, op);
    this.queue = next.catch(() => {});
    return next;
  }

  private unavailable(err: unknown): ApiError {
    this.down(err);
    this.log('warn', 'a record write failed: the records database is unavailable', { error: describe(err) });
    return storeUnavailable();
  }

  private down(err: unknown): void {
    this.availability.down(err);
  }

  private up(): void {
    this.availability.up();
  }
}

/** An error of the transaction's own `fn` (not of the database), carried past the store_unavailable mapping. */
class PassThrough {
  constructor(readonly error: unknown) {}
}
