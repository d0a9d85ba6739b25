import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { ApiKeyRepository } from '../../src/accounts/api-key-repository.ts';
import { SessionRepository } from '../../src/accounts/session-repository.ts';
import { UserRepository } from '../../src/accounts/user-repository.ts';
import { ResponseRepository } from '../../src/inference/response-repository.ts';
import { HearthStore, indexKeys, indexRange, MAX_KEY_BYTES } from '../../src/store/database.ts';
import { PostgresStore } from '../../src/store/postgres/postgres-store.ts';
import type { RecordStore } from '../../src/store/record-store.ts';
import { ProjectRepository } from '../../src/workspaces/project-repository.ts';
import { ProviderKeyCipher } from '../../src/workspaces/provider-key-cipher.ts';
import { WorkspaceRepository } from '../../src/workspaces/workspace-repository.ts';
import { usePostgres } from '../helpers/postgres.ts';

/**
 * The RecordStore contract (src/store/record-store.ts), run against both implementations: LMDB in a data dir
 * and PostgreSQL with its in-memory mirror. Every test opens a fresh store (a new data dir / a new database)
 * and may reopen it (a restart) to see what was durable.
 */
interface Backend {
  name: string;
  /** A fresh, empty place for records; `open()` opens a store on it (again after a close: a restart). */
  fresh(): Promise<{ open(): Promise<RecordStore> }>;
}

const pgServer = usePostgres();
const cleanups: (() => Promise<void> | void)[] = [];
afterEach(async () => {
  for (const c of cleanups.splice(0).reverse()) await c();
});

const backends: Backend[] = [
  {
    name: 'LMDB',
    async fresh() {
      const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'hearth-contract-'));
      cleanups.push(() => fs.rmSync(dir, { recursive: true, force: true }));
      return { open: async () => HearthStore.open(dir) };
    },
  },
  {
    name: 'PostgreSQL',
    async fresh() {
      const url = await pgServer.server.createDatabase();
      return { open: () => PostgresStore.open(url) };
    },
  },
];

describe.each(backends)('RecordStore contract on $name', (backend) => {
  async function openFresh() {
    const place = await backend.fresh();
    const stores: RecordStore[] = [];
    const open = async () => {
      const s = await place.open();
      stores.push(s);
      return s;
    };
    cleanups.push(async () => {
      for (const s of stores) await s.close();
    });
    return { store: await open(), reopen: open };
  }

  it('a resolved write is read back at once, and after a restart', async () => {
    const { store, reopen } = await openFresh();
    await store.transaction(() => {
      store.dbs.accounts.put('a1', { id: 'a1', name: 'one', createdAt: '2026-01-01T00:00:00.000Z' });
      store.dbs.index.put(indexKeys.user('a1', 'u1'), true);
    });
    expect(store.dbs.accounts.get('a1')).toEqual({ id: 'a1', name: 'one', createdAt: '2026-01-01T00:00:00.000Z' });
    await store.dbs.accounts.put('a2', { id: 'a2', name: 'two', createdAt: '2026-01-01T00:00:00.000Z' });
    await store.dbs.accounts.remove('a1');
    await store.close();
    const again = await reopen();
    expect(again.dbs.accounts.get('a1')).toBeUndefined();
    expect(again.dbs.accounts.get('a2')?.name).toBe('two');
    expect([...again.dbs.index.getKeys()]).toEqual([['user', 'a1', 'u1']]);
  });

  it('range reads keep the key order and [start, end) bounds the repositories rely on', async () => {
    const { store } = await openFresh();
    const keys = [
      ['key', 'a', '2'],
      ['key', 'b', '1'],
      ['key', 'a', '1'],
      ['key', 'ab', 'x'],
      ['response-expiry', '2026-01-02T00:00:00.000Z', 'r2'],
      ['response-expiry', '2026-01-01T00:00:00.000Z', 'r1'],
      ['response-expiry', '2026-01-03T00:00:00.000Z', 'r3'],
      ['user-email', 'ü@x', 'u2'],
    ];
    await store.transaction(() => {
      for (const k of keys) store.dbs.index.put(k, true);
      for (const id of ['s-b', 's-a', 's-c']) store.dbs.setupTokens.put(id, { createdAt: id, expiresAt: id });
    });
    expect([...store.dbs.index.getRange(indexRange('key', 'a'))].map((e) => e.key)).toEqual([
      ['key', 'a', '1'],
      ['key', 'a', '2'],
    ]);
    expect([...store.dbs.index.getRange({ ...indexRange('key', 'a'), limit: 1 })].map((e) => e.value)).toEqual([true]);
    expect([
      ...store.dbs.index.getKeys({
        start: indexRange('response-expiry').start,
        end: ['response-expiry', '2026-01-02T12:00:00.000Z'],
      }),
    ]).toEqual([
      ['response-expiry', '2026-01-01T00:00:00.000Z', 'r1'],
      ['response-expiry', '2026-01-02T00:00:00.000Z', 'r2'],
    ]);
    expect([...store.dbs.index.getKeys(indexRange('user-email', 'ü@x'))]).toEqual([['user-email', 'ü@x', 'u2']]);
    expect([...store.dbs.setupTokens.getKeys()]).toEqual(['s-a', 's-b', 's-c']);
    expect([...store.dbs.setupTokens.getKeys({ limit: 1 })]).toEqual(['s-a']);
  });

  it('reads inside a transaction see its own writes; a removal made while iterating a range snapshot is safe', async () => {
    const { store } = await openFresh();
    await store.transaction(() => {
      for (const id of ['x', 'y', 'z']) store.dbs.index.put(['deployment', 'app', id], true);
    });
    const seen = await store.transaction(() => {
      store.dbs.index.put(['deployment', 'app', 'w'], true);
      const inside = [...store.dbs.index.getKeys(indexRange('deployment', 'app'))].length;
      for (const { key } of [...store.dbs.index.getRange(indexRange('deployment', 'app'))]) store.dbs.index.remove(key);
      return inside;
    });
    expect(seen).toBe(4);
    expect([...store.dbs.index.getKeys(indexRange('deployment', 'app'))]).toEqual([]);
  });

  it('transactionSync: written before it returns; putSync/removeSync inside it', async () => {
    const { store, reopen } = await openFresh();
    /** A session record of `userId` (its other fields opaque strings). */
    const session = (userId: string) => ({ userId, accountId: 'a', createdAt: 'c', lastSeenAt: 'l', expiresAt: 'e' });
    store.transactionSync(() => store.dbs.sessions.putSync('h1', session('u')));
    expect(store.dbs.sessions.get('h1')?.userId).toBe('u');
    expect(store.transactionSync(() => store.dbs.sessions.removeSync('h1'))).toBe(true);
    expect(store.dbs.sessions.get('h1')).toBeUndefined();
    store.transactionSync(() => store.dbs.sessions.putSync('h2', session('v')));
    await store.transaction(() => {}); // on PostgreSQL a sync write commits in order before any later transaction
    await store.close();
    expect((await reopen()).dbs.sessions.get('h2')?.userId).toBe('v');
  });

  it('check-then-write in one transaction: of concurrent claims exactly one wins', async () => {
    const { store } = await openFresh();
    const claims = await Promise.all(
      Array.from({ length: 12 }, (_, i) =>
        store.transaction(() => {
          if (store.dbs.setupTokens.get('claim') !== undefined) return false;
          store.dbs.setupTokens.put('claim', { createdAt: String(i), expiresAt: String(i) });
          return true;
        }),
      ),
    );
    expect(claims.filter(Boolean)).toHaveLength(1);
  });

  it('a key over MAX_KEY_BYTES names nothing', async () => {
    const { store } = await openFresh();
    const long = 'k'.repeat(MAX_KEY_BYTES + 1);
    expect(store.dbs.apiKeys.get(long)).toBeUndefined();
    expect(await store.transaction(() => store.dbs.apiKeys.remove(long))).toBe(false);
    expect([...store.dbs.index.getRange({ start: ['key', long], end: ['key', long, '\uffff'] })]).toEqual([]);
  });

  it('repositories: keys, users, sessions, workspaces, projects and stored responses work the same', async () => {
    const { store, reopen } = await openFresh();
    const keys = new ApiKeyRepository(store);
    const created = await keys.create('ci', 'acct');
    expect(keys.authenticate(created.key).keyId).toBe(created.id);
    const users = new UserRepository(store);
    const createUser = (email: string, role: 'owner' | 'member') =>
      users.create({ email, password: 'correct horse battery', role, accountId: 'acct' });
    const owner = await createUser('owner@example.com', 'owner');
    expect(users.getByEmail('owner@example.com')?.id).toBe(owner.id);
    const sessions = new SessionRepository(store, { idleMs: 3_600_000, maxAgeMs: 86_400_000 });
    const member = await createUser('member@example.com', 'member');
    const { token } = await sessions.create(member.id, 'acct');
    expect(sessions.resolve(token)?.userId).toBe(member.id);
    const workspaces = new WorkspaceRepository(store);
    const ws = await workspaces.create('acct', 'team');
    expect(workspaces.list('acct').map((w) => w.id)).toEqual([ws.id]);
    const responses = new ResponseRepository(store, 30);
    responses.put({
      id: 'resp_1',
      accountId: 'acct',
      response: { id: 'resp_1', b: 1, a: 2 },
      inputItems: [],
      history: [],
    });
    expect(JSON.stringify(responses.get('acct', 'resp_1')?.response)).toBe('{"id":"resp_1","b":1,"a":2}');
    await store.transaction(() => {});
    await store.close();

    const again = await reopen();
    const keys2 = new ApiKeyRepository(again);
    expect(keys2.authenticate(created.key).keyId).toBe(created.id);
    expect(await keys2.revoke(created.id, 'acct')).toBe(true);
    expect(() => keys2.authenticate(created.key)).toThrow('Unauthorized');
    expect(new SessionRepository(again, { idleMs: 3_600_000, maxAgeMs: 86_400_000 }).resolve(token)?.userId).toBe(
      member.id,
    );
    expect(await new UserRepository(again).delete(member.id, 'acct')).toBe('deleted');
    expect(new UserRepository(again).getByEmail('owner@example.com')?.id).toBe(owner.id);
    expect(new SessionRepository(again, { idleMs: 3_600_000, maxAgeMs: 86_400_000 }).resolve(token)).toBeNull();
    expect(JSON.stringify(new ResponseRepository(again, 30).get('acct', 'resp_1')?.response)).toBe(
      '{"id":"resp_1","b":1,"a":2}',
    );
    const projects = new ProjectRepository(again, new ProviderKeyCipher(Buffer.alloc(32, 7)));
    expect(projects.list('acct', ws.id)).toEqual([]);
  });
});
