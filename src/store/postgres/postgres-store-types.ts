import type { RecordKey, RecordTables } from '../record-store.ts';
import type { StoreHealth } from '../store-health.ts';

/** The names, options and internal records of PostgresStore (postgres-store.ts). */

/** Every table of RecordTables, by the name its rows carry in `records.tbl`. */
export const TABLE_NAMES = [
  'accounts',
  'apiKeys',
  'workspaces',
  'projects',
  'apps',
  'deployments',
  'users',
  'sessions',
  'setupTokens',
  'responses',
  'index',
] as const satisfies readonly (keyof RecordTables)[];
export type TableName = (typeof TABLE_NAMES)[number];
/** The one table whose keys are arrays. */
export const ARRAY_KEYED: TableName = 'index';

/** pg_advisory_xact_lock key every write transaction of the fleet takes ('hearthrw' in ASCII). */
export const WRITE_LOCK = '7522537965568094839';
/** The NOTIFY channel a commit announces its last seq on. */
export const CHANGES_CHANNEL = 'hearth_records';

export type StoreLog = (level: 'info' | 'warn' | 'error', message: string, fields?: Record<string, unknown>) => void;

export interface PostgresStoreOptions {
  /** How often a replica asks for changes when no NOTIFY came (the fallback of LISTEN). */
  pollMs?: number;
  /** Bound of every query (and of a connection attempt), so a database that hangs answers store_unavailable. */
  queryTimeoutMs?: number;
  /** Removed records' tombstones older than this are pruned (a replica behind them reloads everything). */
  tombstoneTtlMs?: number;
  log?: StoreLog;
  /** Called when the database becomes reachable or unreachable. */
  onHealth?: (health: StoreHealth) => void;
}

/** One staged write of a transaction: the record's final value, or undefined for a removal. */
export interface Write {
  tbl: TableName;
  key: RecordKey;
  value: unknown;
  json: string | null;
}

/** The writes of the transaction whose `fn` is running (set only while it runs, synchronously). */
export interface Capture {
  writes: Map<string, Write>;
  /** Mirror values the staged writes replaced, in order, to put back once `fn` returns. */
  undo: { tbl: TableName; key: RecordKey; before: unknown }[];
}

export interface ChangeRow {
  horizon: string;
  tbl: string | null;
  key: string | null;
  value: unknown;
  seq: string | null;
}
