import fs from 'node:fs';
import path from 'node:path';
import { open, type Database, type RootDatabase } from 'lmdb';
import { deepFreeze } from './deep-freeze.ts';
import type { RecordStore, RecordTable } from './record-store.ts';
import type { IndexKey, TableRecords } from './records.ts';
/** The record types, where the repositories have always imported them from. */
export type {
  StoredResponseRecord,
  AccountRecord,
  ApiKeyRecord,
  KeyLimits,
  KeyPriority,
  UserRole,
  UserRecord,
  SessionRecord,
  SetupTokenRecord,
  YamState,
  ProjectState,
  YamRecord,
  WorkspaceRecord,
  EncryptedSecret,
  ProjectRecord,
  AppRecord,
  DeploymentState,
  DeploymentSource,
  DeploymentRecord,
} from './records.ts';

/**
 * The LMDB environment under `<dataDir>/records`. One named database per record kind plus index
 * databases for secondary lookups. LMDB is multi-process safe: the `hearth` CLI and a running server may
 * use the same data dir at once. Writes are awaited to commit (durable: a record acknowledged before a
 * `kill -9` is there after restart). Lifetime: one per process; `close()` is idempotent.
 */
export type HearthDatabases = { [T in keyof TableRecords]: Database<TableRecords[T], string> } & {
  index: Database<true, IndexKey>;
};

/**
 * Keys of the `index` database, one function per kind. Every secondary lookup is a short range read
 * under a known prefix (never a scan of a record database).
 */
export const indexKeys = {
  /** An account's API keys. */
  apiKey: (accountId: string, keyId: string) => ['key', accountId, keyId],
  /** An account's workspaces. */
  workspace: (accountId: string, workspaceId: string) => ['workspace', accountId, workspaceId],
  /** A workspace's inference projects. */
  project: (workspaceId: string, projectId: string) => ['project', workspaceId, projectId],
  /** A project bearer token's public id -> its project. */
  projectToken: (tokenId: string, projectId: string) => ['project-token', tokenId, projectId],
  /** A workspace's apps. */
  app: (workspaceId: string, appId: string) => ['app', workspaceId, appId],
  /** An app's deployments. */
  deployment: (appId: string, deploymentId: string) => ['deployment', appId, deploymentId],
  /** An account's users. */
  user: (accountId: string, userId: string) => ['user', accountId, userId],
  /** A (normalized) email -> its user; at most one entry per email. */
  userEmail: (email: string, userId: string) => ['user-email', email, userId],
  /** Stored responses by expiry time (ISO), for the sweep. */
  responseExpiry: (expiresAt: string, responseId: string) => ['response-expiry', expiresAt, responseId],
  /** A user's sessions (by session hash), to end them all when the user is removed. */
  userSession: (userId: string, sessionHash: string) => ['user-session', userId, sessionHash],
} as const;

/** The [start, end) range of index entries whose key starts with `prefix`. */
export function indexRange(...prefix: string[]): { start: string[]; end: string[] } {
  return { start: prefix, end: [...prefix, '\uffff'] };
}

/**
 * The records of `table` that the index lists under `[kind, ownerId]` (one short range read, then a get each), in
 * index order; an entry whose record is gone is skipped. Callers filter by account and sort as their API promises.
 */
export function indexedRecords<V>(
  index: RecordTable<true, IndexKey>,
  table: RecordTable<V>,
  kind: string,
  ownerId: string,
): V[] {
  const out: V[] = [];
  for (const { key } of index.getRange(indexRange(kind, ownerId))) {
    const r = table.get(String(key[2]));
    if (r !== undefined) out.push(r);
  }
  return out;
}

/** Oldest first by `createdAt`, then by id (the order lists of users, workspaces and projects promise). */
export const oldestFirst = (a: { createdAt: string; id: string }, b: { createdAt: string; id: string }): number =>
  a.createdAt.localeCompare(b.createdAt) || a.id.localeCompare(b.id);

/**
 * The longest key (UTF-8 bytes, all parts of an array key) that is ever looked up or written. LMDB refuses
 * keys over its limit (1978 bytes as lmdb-js builds it) with an exception; a key over this bound names no
 * record Hearth could have written (its ids are short), so it is treated as absent instead.
 */
export const MAX_KEY_BYTES = 1024;

/** Whether `key` is within MAX_KEY_BYTES. */
export function keyFits(key: unknown): boolean {
  if (typeof key === 'string') return key.length * 3 <= MAX_KEY_BYTES || Buffer.byteLength(key) <= MAX_KEY_BYTES;
  if (Array.isArray(key)) {
    let bytes = 0;
    for (const part of key) bytes += typeof part === 'string' ? Buffer.byteLength(part) + 1 : 9;
    return bytes <= MAX_KEY_BYTES;
  }
  return true;
}

/**
 * Bounds every key before it reaches LMDB (defence in depth behind the edge's own bounds): a read or range
 * over an over-long key finds nothing, a remove removes nothing, a write throws a plain Error (ids are
 * generated here, so that is a bug, not a client mistake).
 */
function guardKeys<D extends Database<any, any>>(db: D): D {
  const get = db.get.bind(db);
  const remove = db.remove.bind(db);
  const put = db.put.bind(db);
  const getRange = db.getRange.bind(db);
  const guarded = db as unknown as Record<string, unknown>;
  guarded.get = (key: unknown, ...rest: unknown[]) =>
    keyFits(key) ? (get as (...a: unknown[]) => unknown)(key, ...rest) : undefined;
  guarded.remove = (key: unknown, ...rest: unknown[]) =>
    keyFits(key) ? (remove as (...a: unknown[]) => unknown)(key, ...rest) : false;
  guarded.put = (key: unknown, ...rest: unknown[]) => {
    if (!keyFits(key)) throw new Error(`refusing an LMDB key over ${MAX_KEY_BYTES} bytes`);
    return (put as (...a: unknown[]) => unknown)(key, ...rest);
  };
  guarded.getRange = (options: { start?: unknown; end?: unknown } = {}) =>
    keyFits(options.start) && keyFits(options.end) ? getRange(options as never) : [];
  return db;
}

/** lmdb-js's raw read: a buffer reused by the next read, its value's bytes the first `lastSize` when `isGlobal`. */
interface RawReads {
  getBinaryFast(key: unknown): (Buffer & { isGlobal?: boolean }) | undefined;
  lastSize: number;
}

/**
 * Reads of `db` answered from decoded records kept in memory while their stored bytes are unchanged: each read still
 * looks at the record's current bytes (0.2 us, no decoding; a write by this process or another, such as the CLI
 * revoking a key, changes them and the record is decoded again), and decodes only when they differ (msgpack
 * decoding was 2.5 of the 2.8 us of a read, on every authenticated request). The bytes are read before the
 * decoded value, so a write landing between the two leaves a newer value under older bytes: decoded again next
 * time, never stale. Values are frozen (they are shared between readers), as the PostgreSQL mirror's are. At most
 * `limit` records are kept; past that the cache starts over.
 */
function validatedReads<D extends Database<any, any>>(db: D, limit = 10_000): D {
  const get = db.get.bind(db) as (key: unknown, ...rest: unknown[]) => unknown;
  const raw = db as unknown as RawReads;
  const cache = new Map<string, { bytes: Buffer; value: unknown }>();
  (db as unknown as Record<string, unknown>).get = (key: unknown, ...rest: unknown[]) => {
    if (rest.length > 0 || typeof key !== 'string' || !keyFits(key)) return get(key, ...rest);
    const fast = raw.getBinaryFast(key);
    if (fast === undefined) {
      cache.delete(key);
      return undefined;
    }
    const current = fast.isGlobal ? fast.subarray(0, raw.lastSize) : fast;
    const hit = cache.get(key);
    if (hit !== undefined && hit.bytes.equals(current)) return hit.value;
    const bytes = Buffer.from(current); // the read buffer is reused by the next read
    const value = deepFreeze(get(key));
    if (cache.size >= limit) cache.clear();
    if (value === undefined) cache.delete(key);
    else cache.set(key, { bytes, value });
    return value;
  };
  return db;
}

/** Attempts of a write transaction whose commit failed (HearthStore.transaction). */
const COMMIT_ATTEMPTS = 4;

/** The records on LMDB under `<dataDir>/records`: the RecordStore (record-store.ts) of one machine. */
export class HearthStore implements RecordStore {
  readonly root: RootDatabase;
  readonly dbs: HearthDatabases;
  private closed = false;

  private constructor(root: RootDatabase) {
    this.root = root;
    this.dbs = {
      accounts: guardKeys(root.openDB<TableRecords['accounts'], string>({ name: 'accounts' })),
      apiKeys: validatedReads(guardKeys(root.openDB<TableRecords['apiKeys'], string>({ name: 'api-keys' }))),
      workspaces: guardKeys(root.openDB<TableRecords['workspaces'], string>({ name: 'workspaces' })),
      projects: guardKeys(root.openDB<TableRecords['projects'], string>({ name: 'projects' })),
      apps: guardKeys(root.openDB<TableRecords['apps'], string>({ name: 'apps' })),
      deployments: guardKeys(root.openDB<TableRecords['deployments'], string>({ name: 'deployments' })),
      users: validatedReads(guardKeys(root.openDB<TableRecords['users'], string>({ name: 'users' }))),
      sessions: validatedReads(guardKeys(root.openDB<TableRecords['sessions'], string>({ name: 'sessions' }))),
      setupTokens: guardKeys(root.openDB<TableRecords['setupTokens'], string>({ name: 'setup-tokens' })),
      responses: guardKeys(root.openDB<TableRecords['responses'], string>({ name: 'responses' })),
      index: guardKeys(root.openDB<true, IndexKey>({ name: 'index' })),
    };
  }

  static open(dataDir: string): HearthStore {
    const dir = path.join(dataDir, 'records');
    fs.mkdirSync(dir, { recursive: true, mode: 0o700 });
    const root = open({ path: dir, maxDbs: 16, compression: false });
    return new HearthStore(root);
  }

  /**
   * Runs `fn` in one write transaction: all of its puts/removes commit together. Reads inside `fn` see the
   * committed state at write time (the check-then-write is atomic, also across processes). Caution: lmdb-js
   * does NOT roll back puts made before a throw inside `fn`, so check everything first, then write.
   *
   * A commit that fails is run again (COMMIT_ATTEMPTS in all, `fn` again on the state of then): with several
   * processes writing one data dir at once (the CLI beside a server) on a loaded machine, lmdb-js 3.5 now and then
   * fails a whole write batch (`Commit failed`, MDB_BAD_TXN from mdb_page_touch), and a failed commit wrote
   * nothing. lmdb-js also leaves that failure's `commitError` promise rejected: handled here, so no process dies
   * of an unhandled rejection. A throw of `fn` itself is passed on at once.
   */
  async transaction<T>(fn: () => T): Promise<T> {
    for (let attempt = 1; ; attempt++) {
      try {
        return await this.root.transaction(fn);
      } catch (err) {
        const commitError = (err as { commitError?: Promise<unknown> } | null)?.commitError;
        if (commitError === undefined) throw err;
        const cause = await commitError.then(
          () => undefined,
          (e: unknown) => e,
        );
        if (attempt >= COMMIT_ATTEMPTS)
          throw new Error(
            `the records could not be written (LMDB commit failed ${attempt} times: ${String((cause as Error | undefined)?.message ?? cause)})`,
            { cause },
          );
        await new Promise((resolve) => setTimeout(resolve, 10 * attempt));
      }
    }
  }

  transactionSync<T>(fn: () => T): T {
    return this.root.transactionSync(fn);
  }

  /**
   * LMDB's reads can be behind too, by a moment: lmdb-js reads from one snapshot until its next event turn, and a
   * process that lost the CPU between a read and an incoming request (a busy machine) serves that request from the
   * older snapshot, missing what another process (the CLI, a second server) committed meanwhile. On a miss the
   * caller refreshes once: the next read takes the newest snapshot.
   */
  refresh(): Promise<void> {
    if (!this.closed) this.root.resetReadTxn();
    return Promise.resolve();
  }

  async close(): Promise<void> {
    if (this.closed) return;
    this.closed = true;
    await this.root.close();
  }
}
