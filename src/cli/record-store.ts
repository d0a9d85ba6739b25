import { openRecordStore } from '../store/open-record-store.ts';
import type { RecordStore } from '../store/record-store.ts';
import type { Options } from './cli-args.ts';

/**
 * Opens the records (PostgreSQL at --database-url when set, else LMDB under --data-dir), runs `fn` on them,
 * and closes them (also on failure). Either is safe while servers run on the same records.
 */
export async function withStore<T>(options: Options, fn: (store: RecordStore) => Promise<T>): Promise<T> {
  const databaseUrl = options.databaseUrl === undefined ? undefined : String(options.databaseUrl);
  const { store } = await openRecordStore({ dataDir: String(options.dataDir), databaseUrl });
  try {
    return await fn(store);
  } finally {
    await store.close();
  }
}
