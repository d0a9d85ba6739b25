import { HearthStore } from '../store/database.ts';
import type { Options } from './cli-args.ts';

/** Opens the store under --data-dir, runs `fn` on it, and closes it (also on failure). */
export async function withStore<T>(options: Options, fn: (store: HearthStore) => Promise<T>): Promise<T> {
  const store = HearthStore.open(String(options.dataDir));
  try {
    return await fn(store);
  } finally {
    await store.close();
  }
}
