import { afterEach, describe, expect, it } from 'vitest';
import { ApiKeyRepository } from '../../../src/accounts/api-key-repository.ts';
import { ManagementAuthenticator } from '../../../src/accounts/authenticator.ts';
import { SessionRepository } from '../../../src/accounts/session-repository.ts';
import { UserRepository } from '../../../src/accounts/user-repository.ts';
import { ResponseRepository } from '../../../src/inference/response-repository.ts';
import { ApiError } from '../../../src/errors/index.ts';
import { readMigrations } from '../../../src/store/postgres/migrations.ts';
import { PostgresStore } from '../../../src/store/postgres/postgres-store.ts';
import { CHANGES_SQL } from '../../../src/store/postgres/records-sql.ts';
import { usePostgres } from '../../helpers/postgres.ts';
import { rejectionBy } from '../../helpers/unit-rejection.ts';
import { ProjectRepository } from '../../../src/workspaces/project-repository.ts';
import { ProviderKeyCipher } from '../../../src/workspaces/provider-key-cipher.ts';
import { WorkspaceRepository } from '../../../src/workspaces/workspace-repository.ts';

/**
 * Two PostgreSQL stores on one database, as two replicas of a fleet: each sees the other's writes (NOTIFY,
 * else the 500 ms poll), check-then-write is atomic across them, and a database that goes away turns writes
 * into store_unavailable while reads keep answering, until it comes back.
 */
const pgServer = usePostgres();
const open: PostgresStore[] = [];
afterEach(async () => {
  for (const s of open.splice(0)) await s.close();
});

async function replicas(n: number, options: Parameters<typeof PostgresStore.open>[1] = {}): Promise<PostgresStore[]> {
  const url = await pgServer.server.createDatabase();
  const out: PostgresStore[] = [];
  for (let i = 0; i < n; i++) out.push(await PostgresStore.open(url, options));
  open.push(...out);
  return out;
}

/** Resolves once `check()` holds (polled every 5 ms); rejects after `ms`. */
async function until(check: () => boolean, ms: number): Promise<void> {
  const deadline = Date.now() + ms;
  while (!check()) {
    if (Date.now() > deadline) throw new Error(`not within ${ms} ms`);
    await new Promise((r) => setTimeout(r, 5));
  }
}

const LIMITS = { requestsPerMinute: null, tokensPerMinute: null, maxConcurrent: null, priority: 'interactive' };

describe('PostgreSQL records shared by replicas', () => {
  it('a key created on one replica authenticates on the other, and its revocation is refused there within 1 s', async () => {
    const [a, b] = await replicas(2);
    const keysA = new ApiKeyRepository(a!);
    const keysB = new ApiKeyRepository(b!);
    const created = await keysA.create('ci', 'acct');
    await until(() => b!.dbs.apiKeys.get(created.id) !== undefined, 1_000);
    expect(keysB.authenticate(created.key)).toEqual({ keyId: created.id, accountId: 'acct', limits: LIMITS });
    await keysA.revoke(created.id, 'acct');
    await until(() => b!.dbs.apiKeys.get(created.id)?.revokedAt !== null, 1_000); // the contract's bound (the figure: bench/fleet-records.ts)
    expect(() => keysB.authenticate(created.key)).toThrow('Unauthorized');
  });

  it('a key, session, project token or stored response made on another replica a moment ago is found at once (refresh on a miss; a stored response read current)', async () => {
    // Replica b hears no NOTIFY and polls once in 10 minutes: only refresh() can bring it a's writes.
    const [a, b] = await replicas(2, { pollMs: 600_000 });
    await (b as unknown as { listener: { query(sql: string): Promise<unknown> } }).listener.query('UNLISTEN *');
    await b!.refresh(); // the catch-up b queued when it began to listen has run (under load it could run after a's write)
    const created = await new ApiKeyRepository(a!).create('ci', 'acct');
    const keysB = new ApiKeyRepository(b!);
    expect(() => keysB.authenticate(created.key)).toThrow('Unauthorized');
    expect(await keysB.authenticateFresh(created.key)).toEqual({
      keyId: created.id,
      accountId: 'acct',
      limits: LIMITS,
    });
    // A key nobody made stays a 401 after the one refresh.
    await expect(
      Promise.resolve().then(() => keysB.authenticateFresh('hk_nobody_0000000000000000000000000000000000')),
    ).rejects.toThrow('Unauthorized');

    const sessionsA = new SessionRepository(a!, { idleMs: 3_600_000, maxAgeMs: 86_400_000 });
    const users = new UserRepository(a!);
    await users.issueSetupToken(60_000);
    const owner = await users.create({
      email: 'o@example.com',
      password: 'a password 12',
      role: 'owner',
      accountId: 'acct',
    });
    const { token } = await sessionsA.create(owner.id, 'acct');
    const authB = new ManagementAuthenticator(
      keysB,
      new SessionRepository(b!, { idleMs: 3_600_000, maxAgeMs: 86_400_000 }),
      new UserRepository(b!),
      () => b!.current(),
    );
    const credentials = {
      authorization: '',
      bearer: undefined,
      sessionTokens: [token],
      changes: false,
      sameOrigin: true,
    };
    expect(() => authB.authenticate(credentials)).toThrow();
    expect(await authB.authenticateFresh(credentials)).toMatchObject({
      kind: 'session',
      accountId: 'acct',
      userId: owner.id,
    });

    const workspaces = new WorkspaceRepository(a!);
    const ws = await workspaces.create('acct', 'ws');
    await workspaces.requestYam('acct', ws.id);
    await workspaces.finishYam(ws.id, { ok: true });
    const cipher = new ProviderKeyCipher(Buffer.alloc(32, 9));
    const { project, token: projectToken } = await new ProjectRepository(a!, cipher).create({
      accountId: 'acct',
      workspaceId: ws.id,
      name: 'p',
      provider: 'anthropic',
      model: 'm',
      temperature: null,
      providerApiKey: 'prov-key-0123456789',
    });
    const projectsB = new ProjectRepository(b!, cipher);
    expect(() => projectsB.authenticate(projectToken)).toThrow('Unauthorized');
    expect((await projectsB.authenticateFresh(projectToken)).id).toBe(project.id);

    // What the answer of a stored response waits for: its commit (not a.refresh(), which could return a catch-up
    // queued before the put, and so resolve before the commit: the flake of issue #35).
    await new ResponseRepository(a!, 30).put({
      id: 'resp_1',
      accountId: 'acct',
      response: { id: 'resp_1' },
      inputItems: [],
      history: [],
    });
    const responsesB = new ResponseRepository(b!, 30);
    expect(responsesB.get('acct', 'resp_1')).toBeUndefined();
    expect((await responsesB.getCurrent('acct', 'resp_1'))?.response).toEqual({ id: 'resp_1' });
    expect(await responsesB.getCurrent('another', 'resp_1')).toBeUndefined();
    // Removed on a: gone on b at once, though b still holds it in its records.
    expect(await new ResponseRepository(a!, 30).delete('acct', 'resp_1')).toBe(true);
    expect(responsesB.get('acct', 'resp_1')).toBeDefined();
    expect(await responsesB.getCurrent('acct', 'resp_1')).toBeUndefined();
  });

  it('a stored response is committed when put() resolves, also behind a transaction and a catch-up queued before it', async () => {
    const [a] = await replicas(1, { pollMs: 600_000 });
    const committed = async () =>
      Number(
        (
          await a!.query<{ n: string }>(
            "SELECT count(*) AS n FROM records WHERE tbl = 'responses' AND value IS NOT NULL",
          )
        ).rows[0]!.n,
      );
    for (let i = 0; i < 20; i++) {
      const busy = a!.dbs.setupTokens.put(`t${i}`, { createdAt: 'c', expiresAt: 'e' }); // the queue is busy ...
      void a!.refresh(); // ... so this catch-up is queued before the put, not started (a refresh() now would join it)
      const kept = new ResponseRepository(a!, 30).put({
        id: `resp_${i}`,
        accountId: 'acct',
        response: {},
        inputItems: [],
        history: [],
      });
      expect(kept).toBeInstanceOf(Promise);
      await kept;
      expect(await committed()).toBe(i + 1);
      await busy;
    }
  });

  it('without NOTIFY the poll alone carries a signed-out session to the other replica', async () => {
    const [a, b] = await replicas(2, { pollMs: 200 });
    const sessionsA = new SessionRepository(a!, { idleMs: 3_600_000, maxAgeMs: 86_400_000 });
    const sessionsB = new SessionRepository(b!, { idleMs: 3_600_000, maxAgeMs: 86_400_000 });
    const { token } = await sessionsA.create('usr_1', 'acct');
    await until(() => sessionsB.resolve(token) !== null, 1_000);
    // A write made straight in the database, with no NOTIFY: what a replica that missed it must still learn.
    await (a as unknown as { pool: { query(sql: string): Promise<unknown> } }).pool.query(
      `UPDATE records SET value = NULL, seq = nextval('hearth_record_seq') WHERE tbl = 'sessions'`,
    );
    await until(() => sessionsB.resolve(token) === null, 1_000);
  });

  it('check-then-write is atomic across replicas: of concurrent claims on two replicas exactly one wins', async () => {
    const [a, b] = await replicas(2);
    const claim = (s: PostgresStore, who: string) =>
      s.transaction(() => {
        if (s.dbs.setupTokens.get('claim') !== undefined) return false;
        s.dbs.setupTokens.put('claim', { createdAt: who, expiresAt: who });
        return true;
      });
    const results = await Promise.all(Array.from({ length: 10 }, (_, i) => claim(i % 2 === 0 ? a! : b!, `r${i}`)));
    expect(results.filter(Boolean)).toHaveLength(1);
    await until(() => a!.dbs.setupTokens.get('claim')?.createdAt === b!.dbs.setupTokens.get('claim')?.createdAt, 1_000);
  });

  it('database down: writes fail fast with store_unavailable, reads answer from the mirror, health says why; it recovers by itself', async () => {
    const [a] = await replicas(1, { queryTimeoutMs: 2_000, pollMs: 100 });
    const keys = new ApiKeyRepository(a!);
    const created = await keys.create('before', 'acct');
    expect((await a!.query<{ one: number }>('SELECT 1 AS one')).rows[0]!.one).toBe(1);
    await expect(a!.query('SELECT no_such_column FROM records')).rejects.toThrow(/no_such_column/); // a bug, not an outage
    expect(a!.health().up).toBe(true);
    await pgServer.server.stop();
    try {
      const started = Date.now();
      const err = await rejectionBy(() => keys.create('during', 'acct'), ApiError);
      expect(err.status).toBe(503);
      expect(err.code).toBe('store_unavailable');
      expect(err.retryAfter).toBeGreaterThan(0);
      expect(Date.now() - started).toBeLessThan(10_000); // bounded, never a hang
      expect(keys.authenticate(created.key).keyId).toBe(created.id);
      await expect(a!.query('SELECT 1')).rejects.toMatchObject({ status: 503, code: 'store_unavailable' });
      expect(a!.health()).toMatchObject({ backend: 'postgres', up: false });
      expect(a!.health().error).toBeTruthy();
      // A management read cannot know what other replicas wrote: store_unavailable at once, not the mirror's answer.
      await expect(a!.current()).rejects.toMatchObject({ status: 503, code: 'store_unavailable' });
      // A synchronous write is applied here at once; its commit fails, and it is taken back.
      a!.transactionSync(() => a!.dbs.setupTokens.putSync('sync', { createdAt: 'c', expiresAt: 'e' }));
      expect(a!.dbs.setupTokens.get('sync')).toBeDefined();
      await until(() => a!.dbs.setupTokens.get('sync') === undefined, 10_000);
    } finally {
      await pgServer.server.start();
    }
    await until(() => a!.health().up, 10_000);
    await a!.current();
    const after = await keys.create('after', 'acct');
    expect(keys.authenticate(after.key).keyId).toBe(after.id);
  });

  it('a database that stops answering: a write answers store_unavailable within the query timeout, the next at once', async () => {
    const [a] = await replicas(1, { queryTimeoutMs: 1_500, pollMs: 100 });
    const keys = new ApiKeyRepository(a!);
    const created = await keys.create('before', 'acct');
    pgServer.server.freeze();
    try {
      const started = Date.now();
      const codes = await Promise.all(
        [keys.create('one', 'acct'), keys.create('two', 'acct'), keys.revoke(created.id, 'acct')].map((p) =>
          p.then(
            () => 'written',
            (e: unknown) => (e as ApiError).code,
          ),
        ),
      );
      expect(codes).toEqual(['store_unavailable', 'store_unavailable', 'store_unavailable']);
      expect(Date.now() - started).toBeLessThan(8_000); // one query timeout, not one per queued write
      expect(keys.authenticate(created.key).keyId).toBe(created.id);
    } finally {
      pgServer.server.thaw();
    }
    await until(() => a!.health().up, 10_000);
    expect(await keys.revoke(created.id, 'acct')).toBe(true);
  });

  it('the catch-up query is planned as the few rows it reads: never JIT-compiled (milliseconds per catch-up)', async () => {
    const [a] = await replicas(1);
    for (let i = 0; i < 20; i++) await a!.dbs.users.put(`u${i}`, { id: `u${i}` } as never);
    const explain = async (from: number) => {
      const { rows } = await a!.query<{ 'QUERY PLAN': [{ JIT?: unknown; Plan: { 'Total Cost': number } }] }>(
        `EXPLAIN (ANALYZE, FORMAT JSON) ${CHANGES_SQL}`,
        [from],
      );
      return rows[0]!['QUERY PLAN'][0];
    };
    const jitAbove = Number(
      (await a!.query<{ v: string }>("SELECT current_setting('jit_above_cost') AS v")).rows[0]!.v,
    );
    for (const from of [-1, 10, 1_000]) {
      const plan = await explain(from);
      expect(plan.JIT, `from ${from}`).toBeUndefined();
      expect(plan.Plan['Total Cost']).toBeLessThan(jitAbove);
    }
  });

  it('replicas starting together on a new database apply each migration once', async () => {
    const url = await pgServer.server.createDatabase();
    const stores = await Promise.all([1, 2, 3].map(() => PostgresStore.open(url)));
    open.push(...stores);
    const rows = await (
      stores[0] as unknown as { pool: { query(sql: string): Promise<{ rows: { version: number }[] }> } }
    ).pool.query('SELECT version FROM schema_migrations ORDER BY version');
    expect(rows.rows.map((r) => r.version)).toEqual(readMigrations().map((m) => m.version)); // each once, in order
  });

  it('a replica that missed removals whose tombstones were pruned reloads every record', async () => {
    const [a, b] = await replicas(2, { tombstoneTtlMs: 0, pollMs: 600_000 });
    await a!.dbs.users.put('u1', { id: 'u1' } as never);
    await until(() => b!.dbs.users.get('u1') !== undefined, 2_000);
    type Internals = { listener: { end(): Promise<void> } | null; catchUp(): void; pruneTombstones(): Promise<void> };
    const bi = b as unknown as Internals;
    const deaf = bi.listener;
    bi.listener = null;
    await deaf?.end(); // B hears no NOTIFY and does not poll: it misses what follows
    await a!.dbs.users.remove('u1');
    await (a as unknown as Internals).pruneTombstones(); // the removal's tombstone is gone from the database
    expect(b!.dbs.users.get('u1')).toBeDefined();
    bi.catchUp();
    await until(() => b!.dbs.users.get('u1') === undefined, 2_000);
  });
});
