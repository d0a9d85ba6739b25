import type { IndexKey, TableRecords } from './records.ts';

/**
 * The one interface every repository is written against: tables of records by id, one index table, and
 * transactions. `HearthStore` (database.ts) implements it on LMDB in one data dir; `PostgresStore`
 * (postgres/postgres-store.ts) on PostgreSQL for a fleet of replicas (`--database-url`), reading from an
 * in-memory mirror of every record. Repositories never see the database behind it.
 *
 * Contract:
 * - Reads (`get`, `getRange`, `getKeys`) are synchronous and see committed state, so a read answers without a
 *   promise (pipelined GETs stay in order). On PostgreSQL: this replica's mirror, at most a poll (500 ms) behind
 *   another replica's commit (usually a NOTIFY, milliseconds), and still answering while the database is down;
 *   after `await current()`, not behind at all.
 * - `transaction(fn)` runs `fn` as one write transaction: every `put` / `remove` made in it commits together,
 *   and reads inside it see the committed state at write time (and its own writes), so check-then-write is
 *   atomic (also across processes sharing the data dir, and across replicas sharing the database). Writes are
 *   durable once the promise resolves. A throw inside `fn` does not undo writes made before it on LMDB (on
 *   PostgreSQL it discards them): check everything first, then write. On PostgreSQL an unreachable database
 *   rejects it with the 503 store_unavailable ApiError, nothing written.
 * - `transactionSync(fn)` is the same, committed before it returns (for a write that must be visible before
 *   the caller's next step, e.g. a response stored before its answer ends); `putSync` / `removeSync` inside it.
 *   On PostgreSQL (Node cannot wait for the network synchronously) it is applied to this replica's mirror
 *   before it returns and committed right after, in order with later transactions; a commit that fails is
 *   taken back from the mirror and logged. Only stored responses use it.
 * - A key over MAX_KEY_BYTES (database.ts) names nothing: reads find nothing, removes remove nothing.
 * - Values are plain JSON (strings, numbers, booleans, null, arrays, objects): PostgreSQL keeps them as JSON text.
 */
export type RecordKey = string | (string | number)[];

export interface RangeOptions<K extends RecordKey> {
  start?: K;
  end?: K;
  limit?: number;
}

/** One table: a record kind by its id, or the index (`[kind, ownerId, recordId] -> true`). */
export interface RecordTable<V, K extends RecordKey = string> {
  get(key: K): V | undefined;
  /** In a transaction: part of it. Outside one: its own write, durable when the promise resolves. */
  put(key: K, value: V): Promise<boolean> | boolean;
  remove(key: K): Promise<boolean> | boolean;
  putSync(key: K, value: V): void;
  removeSync(key: K): boolean;
  /** Entries in key order within [start, end). */
  getRange(options?: RangeOptions<K>): Iterable<{ key: K; value: V }>;
  getKeys(options?: RangeOptions<K>): Iterable<K>;
}

/** Every table: each record kind of TableRecords by its id, and the secondary index (`[kind, ownerId, recordId] -> true`). */
export type RecordTables = { [T in keyof TableRecords]: RecordTable<TableRecords[T]> } & {
  index: RecordTable<true, IndexKey>;
};

export interface RecordStore {
  readonly dbs: RecordTables;
  transaction<T>(fn: () => T): Promise<T>;
  transactionSync<T>(fn: () => T): T;
  /**
   * Catches this process's reads up with records committed elsewhere and resolves once they are current: on
   * PostgreSQL the per-replica mirror (one query in flight however many ask); on LMDB the read snapshot, which
   * lmdb-js keeps for an event turn (another process, such as the CLI, may have committed since). Callers use it
   * once on a miss that another process may explain (a key or session created there a moment ago).
   */
  refresh?(): Promise<void>;
  /**
   * Only a store whose `transactionSync` commits after it returns (PostgreSQL): resolves once the last
   * transactionSync is committed, where every replica reads it; rejects with the 503 store_unavailable ApiError
   * when that commit failed (its writes were taken back). Called right after a transactionSync, it is that
   * one's commit: what an answer that tells the client about the write waits for (a stored response).
   */
  syncCommitted?(): Promise<void>;
  /**
   * Only a store whose reads can be behind (as refresh): resolves once this process's reads reflect every commit
   * made anywhere before the call (one catch-up that starts after it, shared by the callers waiting together);
   * rejects with the 503 store_unavailable ApiError when that cannot be known (database unreachable). What a
   * management request awaits before it reads anything (ManagementAuthenticator.authenticateFresh, sign-in), so it
   * reads its own and
   * every replica's writes; the inference hot path never awaits it.
   */
  current?(): Promise<void>;
  close(): Promise<void>;
}
