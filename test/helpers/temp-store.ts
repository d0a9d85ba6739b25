import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { afterEach, beforeEach } from 'vitest';
import { HearthStore } from '../../src/store/database.ts';
import { PostgresStore } from '../../src/store/postgres/postgres-store.ts';
import type { RecordStore } from '../../src/store/record-store.ts';
import { usePostgres } from './postgres.ts';

/**
 * A fresh store in its own temporary directory for every test of the file (or describe block) that calls
 * this: opened in beforeEach, closed and removed in afterEach (after the caller's own afterEach hooks, as
 * vitest runs after-hooks in reverse order). `dir` and `store` are read inside hooks and tests.
 *
 * The records are LMDB in `dir`; with HEARTH_TEST_RECORDS=postgres they are a fresh PostgreSQL database per
 * test instead (one server per file, test/helpers/postgres.ts), so every repository suite written on this
 * helper runs against both stores: `HEARTH_TEST_RECORDS=postgres npx vitest run test/unit/accounts ...`.
 */
export function useTempStore(prefix: string): {
  readonly dir: string;
  readonly store: RecordStore;
  another(): Promise<RecordStore>;
} {
  const pg = process.env.HEARTH_TEST_RECORDS === 'postgres' ? usePostgres() : undefined;
  let current: { dir: string; url: string | undefined; store: RecordStore } | undefined;
  beforeEach(async () => {
    const dir = fs.mkdtempSync(path.join(os.tmpdir(), prefix));
    const url = pg ? await pg.server.createDatabase() : undefined;
    current = { dir, url, store: url ? await PostgresStore.open(url) : HearthStore.open(dir) };
  });
  afterEach(async () => {
    const done = current;
    current = undefined;
    await done?.store.close();
    if (done) fs.rmSync(done.dir, { recursive: true, force: true });
  });
  const open = () => {
    if (!current) throw new Error('useTempStore: the store is open only inside tests and their hooks');
    return current;
  };
  return {
    get dir() {
      return open().dir;
    },
    get store() {
      return open().store;
    },
    /** A second handle on the same records (another process, another replica); the caller closes it. */
    another: async () => {
      const { dir, url } = open();
      return url ? PostgresStore.open(url) : HearthStore.open(dir);
    },
  };
}
