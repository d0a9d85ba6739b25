import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { afterEach, beforeEach } from 'vitest';
import { HearthStore } from '../../src/store/database.ts';

/**
 * A fresh store in its own temporary directory for every test of the file (or describe block) that calls
 * this: opened in beforeEach, closed and removed in afterEach (after the caller's own afterEach hooks, as
 * vitest runs after-hooks in reverse order). `dir` and `store` are read inside hooks and tests.
 */
export function useTempStore(prefix: string): { readonly dir: string; readonly store: HearthStore } {
  let current: { dir: string; store: HearthStore } | undefined;
  beforeEach(() => {
    const dir = fs.mkdtempSync(path.join(os.tmpdir(), prefix));
    current = { dir, store: HearthStore.open(dir) };
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
  };
}
