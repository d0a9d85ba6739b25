/**
 * HearthStore.transaction on a commit that fails (lmdb-js 3.5 fails a whole write batch now and then when several
 * processes write one data dir on a loaded machine: `Commit failed` with a rejected `commitError`): the transaction
 * runs again and resolves, its write is there; a throw of the transaction's own function is passed on at once; a
 * commit that keeps failing ends in one clear error; the rejected `commitError` never becomes an unhandled
 * rejection (vitest fails a file that has one). The failing commits are lmdb-js's own error shape, injected.
 */
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { HearthStore } from '../../../src/store/database.ts';

let dir: string;
let store: HearthStore;

beforeEach(() => {
  dir = fs.mkdtempSync(path.join(os.tmpdir(), 'hearth-commit-'));
  store = HearthStore.open(dir);
});

afterEach(async () => {
  await store.close();
  fs.rmSync(dir, { recursive: true, force: true });
});

/** Makes the next `failures` commits of `store` fail as lmdb-js does (the function runs, nothing is written). */
function failCommits(failures: number): { calls: () => number } {
  const real = store.root.transaction.bind(store.root);
  let calls = 0;
  (store.root as { transaction: unknown }).transaction = (fn: () => unknown) => {
    calls++;
    if (calls > failures) return real(fn);
    fn();
    const error = Object.assign(new Error('Commit failed (see commitError for details)'), {
      commitError: Promise.reject(
        Object.assign(
          new Error('MDB_BAD_TXN: Transaction must abort, has a child, or is invalid: mdb_page_touch no parent'),
          { code: -30782 },
        ),
      ),
    });
    return Promise.reject(error);
  };
  return { calls: () => calls };
}

describe('HearthStore.transaction when a commit fails', () => {
  it('runs the transaction again: it resolves with its value and its write is there', async () => {
    const commits = failCommits(2);
    let runs = 0;
    const value = await store.transaction(() => {
      runs++;
      store.dbs.accounts.put('acct', { id: 'acct', name: 'acct', createdAt: new Date(0).toISOString() });
      return 'done';
    });
    expect(value).toBe('done');
    expect(commits.calls()).toBe(3);
    expect(runs).toBe(3);
    expect(store.dbs.accounts.get('acct')?.id).toBe('acct');
  });

  it('passes on a throw of the function itself at once', async () => {
    const commits = failCommits(0);
    await expect(
      store.transaction(() => {
        throw new Error('refused by the check');
      }),
    ).rejects.toThrow('refused by the check');
    expect(commits.calls()).toBe(1);
  });

  it('gives up after four failed commits with one clear error naming the cause', async () => {
    const commits = failCommits(10);
    await expect(store.transaction(() => 1)).rejects.toThrow(
      /records could not be written \(LMDB commit failed 4 times: MDB_BAD_TXN/,
    );
    expect(commits.calls()).toBe(4);
  });
});
