/**
 * Whether the records database answers (GET /health `store`, the hearth_store_up gauge). LMDB in the data dir
 * is always up; PostgreSQL is down from a failed query or connection until one succeeds again.
 */
export interface StoreHealth {
  backend: 'lmdb' | 'postgres';
  up: boolean;
  /** Why it is down (the driver's message), while down. */
  error?: string | undefined;
  /** When it went down (ISO), while down. */
  since?: string | undefined;
}
