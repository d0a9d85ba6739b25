import type { Logger } from '../log/logger.ts';
import type { BatchStore } from './batch-store.ts';
import { LmdbBatchStore } from './lmdb-batch-store.ts';

/**
 * The Batch API's store where the records live: the data dir on one node (LmdbBatchStore); with a database URL,
 * PostgreSQL, which every replica of a fleet reads (PostgresBatchStore).
 */
export async function openBatchStore(
  dataDir: string,
  databaseUrl: string | undefined,
  log: Logger,
): Promise<BatchStore> {
  if (databaseUrl === undefined) return new LmdbBatchStore(dataDir);
  const { PostgresBatchStore } = await import('./postgres-batch-store.ts');
  return PostgresBatchStore.open(databaseUrl, dataDir, log);
}
