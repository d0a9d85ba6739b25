import { HearthStore } from './database.ts';
import type { RecordStore } from './record-store.ts';
import type { StoreHealth } from './store-health.ts';
import { PostgresStore, type StoreLog } from './postgres/postgres-store.ts';

/** A record store with its health: what the server and the CLI open. */
export interface OpenedStore {
  store: RecordStore;
  health(): StoreHealth;
  /** Where the records are, for the log: the data dir, or the database URL without its password. */
  location: string;
  /** The PostgreSQL store when --database-url is set (its `query()` serves tables beside the records). */
  postgres?: PostgresStore | undefined;
}

/**
 * The records of `--database-url` (PostgreSQL, migrated and loaded) when it is set, else LMDB under
 * `<dataDir>/records` (the single-machine default, unchanged).
 */
export async function openRecordStore(options: {
  dataDir: string;
  databaseUrl?: string | undefined;
  log?: StoreLog;
  onHealth?: (h: StoreHealth) => void;
}): Promise<OpenedStore> {
  if (options.databaseUrl) {
    const store = await PostgresStore.open(options.databaseUrl, { log: options.log, onHealth: options.onHealth });
    return { store, health: () => store.health(), location: redactUrl(options.databaseUrl), postgres: store };
  }
  const store = HearthStore.open(options.dataDir);
  return { store, health: () => ({ backend: 'lmdb', up: true }), location: options.dataDir };
}

/** A database URL with its password replaced by `***` (for logs and errors). */
export function redactUrl(url: string): string {
  try {
    const u = new URL(url);
    if (u.password) u.password = '***';
    return u.toString();
  } catch {
    return 'an unparsable database URL';
  }
}
