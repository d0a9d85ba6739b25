import { afterEach, describe, expect, it } from 'vitest';
import type { ApiKeyView } from '../../../src/accounts/account-views.ts';
import { ApiKeyRepository } from '../../../src/accounts/api-key-repository.ts';
import { ManagementAuthenticator, type PresentedCredentials } from '../../../src/accounts/authenticator.ts';
import { SessionRepository } from '../../../src/accounts/session-repository.ts';
import { UserRepository } from '../../../src/accounts/user-repository.ts';
import { AppRepository } from '../../../src/apps/app-repository.ts';
import { PostgresStore } from '../../../src/store/postgres/postgres-store.ts';
import type { AppRecord, ProjectRecord, WorkspaceRecord } from '../../../src/store/records.ts';
import { ProjectRepository } from '../../../src/workspaces/project-repository.ts';
import { ProviderKeyCipher } from '../../../src/workspaces/provider-key-cipher.ts';
import { WorkspaceRepository } from '../../../src/workspaces/workspace-repository.ts';
import { usePostgres } from '../../helpers/postgres.ts';

/**
 * Every record reads its own writes across the fleet (contract "Past one machine"): three replicas on one
 * database, the third deaf to NOTIFY and never polling, so only what a management request awaits before it reads
 * (ManagementAuthenticator.authenticateFresh: RecordStore.current) can bring it another replica's writes. Each
 * change made on one replica is read at once on the two others, by id and in its list, as the management API
 * reads it: authenticate, then the repositories' synchronous reads.
 */
const pgServer = usePostgres();
const open: PostgresStore[] = [];
afterEach(async () => {
  for (const s of open.splice(0)) await s.close();
});

const ACCOUNT = 'acct';
const ROUNDS = 1_000;
const cipher = new ProviderKeyCipher(Buffer.alloc(32, 7));

/** One replica as the management API sees it: its store, the repositories over it, and the authenticator main.ts builds. */
function replica(store: PostgresStore) {
  const keys = new ApiKeyRepository(store);
  const sessions = new SessionRepository(store, { idleMs: 3_600_000, maxAgeMs: 86_400_000 });
  return {
    store,
    keys,
    workspaces: new WorkspaceRepository(store),
    projects: new ProjectRepository(store, cipher),
    apps: new AppRepository(store, cipher),
    auth: new ManagementAuthenticator(keys, sessions, new UserRepository(store), store.current.bind(store)),
  };
}
type Replica = ReturnType<typeof replica>;

/** The records a reader must see after a change: undefined where it must find nothing. */
interface Expected {
  what: string;
  read: (r: Replica) => { byId: unknown; inList: unknown };
  want: unknown;
}

/** What a reader takes of a record (undefined where it found none). */
type Reading<T> = (record: T | undefined) => unknown;

/** One record as a replica reads it: `pick` of it read by id and of it found (by `id`) in its list. */
function readBoth<T extends { id: string }>(
  byId: T | undefined,
  list: T[],
  id: string,
  pick: Reading<T>,
): { byId: unknown; inList: unknown } {
  return { byId: pick(byId), inList: pick(list.find((x) => x.id === id)) };
}

describe('a fleet of three replicas, one deaf to NOTIFY', () => {
  it(
    `a workspace, project, app or key created, changed or removed on one replica is read at once on the others, ${ROUNDS} times`,
    { timeout: 600_000 },
    async () => {
      const url = await pgServer.server.createDatabase();
      const a = await PostgresStore.open(url);
      const b = await PostgresStore.open(url);
      const c = await PostgresStore.open(url, { pollMs: 600_000 }); // polls once in 10 minutes
      open.push(a, b, c);
      await (c as unknown as { listener: { query(sql: string): Promise<unknown> } }).listener.query('UNLISTEN *');
      await c.refresh(); // the catch-up c queued when it began to listen has run: from now on it hears nothing by itself
      const fleet = [a, b, c].map(replica);
      const admin = await fleet[0]!.keys.create('admin', ACCOUNT);
      const credentials: PresentedCredentials = {
        authorization: `Bearer ${admin.key}`,
        bearer: admin.key,
        sessionTokens: [],
        changes: false,
        sameOrigin: false,
      };

      let ws = '';
      let project = '';
      let app = '';
      let key = '';
      /** What replica `r` reads of the current workspace, project, app or key: `pick` of it by id and in its list. */
      const seenWorkspace = (pick: Reading<WorkspaceRecord>) => (r: Replica) =>
        readBoth(r.workspaces.get(ACCOUNT, ws), r.workspaces.list(ACCOUNT), ws, pick);
      const seenProject = (pick: Reading<ProjectRecord>) => (r: Replica) =>
        readBoth(r.projects.get(ACCOUNT, ws, project), r.projects.list(ACCOUNT, ws), project, pick);
      const seenApp = (pick: Reading<AppRecord>) => (r: Replica) =>
        readBoth(r.apps.get(ACCOUNT, ws, app), r.apps.list(ACCOUNT, ws), app, pick);
      const seenKey = (pick: Reading<ApiKeyView>) => (r: Replica) =>
        readBoth(r.keys.get(key), r.keys.list(ACCOUNT), key, pick);
      /** The changes in turn: each writes on `w` and says what the others must read next. */
      const steps: ((w: Replica, n: number) => Promise<Expected>)[] = [
        async (w, n) => {
          ws = (await w.workspaces.create(ACCOUNT, `ws ${n}`)).id;
          return {
            what: 'workspace created',
            read: seenWorkspace((x) => x?.name),
            want: `ws ${n}`,
          };
        },
        async (w) => {
          await w.workspaces.requestYam(ACCOUNT, ws);
          await w.workspaces.finishYam(ws, { ok: true });
          return {
            what: 'Yam ready',
            read: seenWorkspace((x) => x?.yam?.state),
            want: 'ready',
          };
        },
        async (w, n) => {
          project = (
            await w.projects.create({
              accountId: ACCOUNT,
              workspaceId: ws,
              name: `p ${n}`,
              provider: 'anthropic',
              model: 'm',
              temperature: null,
              providerApiKey: 'prov-key-0123456789',
            })
          ).project.id;
          return {
            what: 'project created',
            read: seenProject((x) => x?.name),
            want: `p ${n}`,
          };
        },
        async (w, n) => {
          await w.projects.update(ACCOUNT, ws, project, { name: `renamed p ${n}` });
          return {
            what: 'project renamed',
            read: seenProject((x) => x?.name),
            want: `renamed p ${n}`,
          };
        },
        async (w, n) => {
          app = (
            await w.apps.create(
              AppRepository.newAppId(),
              {
                accountId: ACCOUNT,
                workspaceId: ws,
                name: `app ${n}`,
                env: { A: '1' },
                apiKeyEnv: null,
                healthPath: '/',
              },
              null,
            )
          ).id;
          return {
            what: 'app created',
            read: seenApp((x) => x?.name),
            want: `app ${n}`,
          };
        },
        async (w, n) => {
          await w.apps.update(app, { name: `renamed app ${n}` });
          return {
            what: 'app renamed',
            read: seenApp((x) => x?.name),
            want: `renamed app ${n}`,
          };
        },
        async (w) => {
          await w.apps.delete(app);
          return {
            what: 'app deleted',
            read: seenApp((x) => x),
            want: undefined,
          };
        },
        async (w) => {
          await w.projects.delete(ACCOUNT, ws, project);
          return {
            what: 'project deleted',
            read: seenProject((x) => x),
            want: undefined,
          };
        },
        async (w, n) => {
          key = (await w.keys.create(`key ${n}`, ACCOUNT)).id;
          return {
            what: 'key created',
            read: seenKey((x) => x?.name),
            want: `key ${n}`,
          };
        },
        async (w, n) => {
          await w.keys.update(key, ACCOUNT, { name: `renamed key ${n}` });
          return {
            what: 'key renamed',
            read: seenKey((x) => x?.name),
            want: `renamed key ${n}`,
          };
        },
        async (w) => {
          await w.keys.revoke(key, ACCOUNT);
          return {
            what: 'key revoked',
            read: seenKey((x) => x?.revokedAt !== null),
            want: true,
          };
        },
        async (w) => {
          await w.workspaces.delete(ACCOUNT, ws);
          return {
            what: 'workspace deleted',
            read: seenWorkspace((x) => x),
            want: undefined,
          };
        },
      ];

      const misses: string[] = [];
      for (let n = 0; n < ROUNDS; n++) {
        const writer = n % 3;
        const expected = await steps[n % steps.length]!(fleet[writer]!, n);
        await Promise.all(
          fleet.map(async (r, i) => {
            if (i === writer) return;
            const caller = await r.auth.authenticateFresh(credentials);
            expect(caller.accountId).toBe(ACCOUNT);
            const seen = expected.read(r);
            if (seen.byId !== expected.want || seen.inList !== expected.want)
              misses.push(`round ${n}, ${expected.what} on replica ${writer}, read on ${i}: ${JSON.stringify(seen)}`);
          }),
        );
      }
      expect({ misses: misses.length, first: misses.slice(0, 5) }).toEqual({ misses: 0, first: [] });
    },
  );

  it('current(): callers waiting together share one catch-up query; one that comes while it runs waits for the next', async () => {
    const url = await pgServer.server.createDatabase();
    const store = await PostgresStore.open(url, { pollMs: 600_000 });
    open.push(store);
    await store.refresh(); // the catch-up queued when it began to listen has run
    const pool = (store as unknown as { pool: { query: (...args: unknown[]) => Promise<unknown> } }).pool;
    const query = pool.query.bind(pool);
    let catchUps = 0;
    pool.query = (...args: unknown[]) => {
      if (String(args[0]).includes('records_horizon')) catchUps++;
      return query(...args);
    };
    await Promise.all(Array.from({ length: 50 }, () => store.current()));
    expect(catchUps).toBe(1);
    const first = store.current();
    await new Promise((r) => setImmediate(r)); // the first has started its query
    const second = store.current();
    await Promise.all([first, second]);
    expect(catchUps).toBe(3); // the one of `first`, then one that started after `second` was asked for
  });
});
