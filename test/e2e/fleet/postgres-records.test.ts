import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { ApiKeyRepository } from '../../../src/accounts/api-key-repository.ts';
import { SessionRepository } from '../../../src/accounts/session-repository.ts';
import { UserRepository } from '../../../src/accounts/user-repository.ts';
import { AppRepository } from '../../../src/apps/app-repository.ts';
import { ResponseRepository } from '../../../src/inference/response-repository.ts';
import { HearthStore } from '../../../src/store/database.ts';
import { loadMasterKey } from '../../../src/store/master-key.ts';
import { PostgresStore, TABLE_NAMES } from '../../../src/store/postgres/postgres-store.ts';
import { ProjectRepository } from '../../../src/workspaces/project-repository.ts';
import { ProviderKeyCipher } from '../../../src/workspaces/provider-key-cipher.ts';
import { WorkspaceRepository } from '../../../src/workspaces/workspace-repository.ts';
import { type HearthProcess, hearthCli, startHearthProcess } from '../../helpers/hearth-process.ts';
import { stopThenRemove } from '../../helpers/suite-cleanup.ts';
import { callApi, waitFor } from '../../helpers/management-client.ts';
import { usePostgres } from '../../helpers/postgres.ts';
import { tinyChatModel } from '../../helpers/test-model.ts';

/**
 * Records in PostgreSQL end to end: `hearth db import` moves an LMDB data dir holding every record kind into
 * PostgreSQL with every record equal; a server started with --database-url then serves the old key, the old
 * session and the old encrypted provider key; sign-in, key creation and an inference call work; with the
 * database stopped a write route answers 503 store_unavailable (Retry-After) and /health says why while a
 * known key still infers; with the database back the server recovers by itself.
 */
const pgServer = usePostgres();
const PASSWORD = 'owner password 1';
let dataDir: string;
let url: string;
let hearth: HearthProcess | undefined;
const old = { key: '', keyId: '', sessionToken: '', projectId: '', providerKey: 'sk-provider-secret-0123456789' };

/** Fills an LMDB data dir with one or more records of every kind, through the repositories. */
async function fillDataDir(dir: string): Promise<void> {
  const store = HearthStore.open(dir);
  try {
    const cipher = new ProviderKeyCipher(loadMasterKey({ secretKey: undefined, dataDir: dir }).key);
    const created = await new ApiKeyRepository(store).create('old key', 'default');
    Object.assign(old, { key: created.key, keyId: created.id });
    const users = new UserRepository(store);
    expect(await users.issueSetupToken(86_400_000)).not.toBeNull();
    const owner = await users.create({
      email: 'owner@example.com',
      password: PASSWORD,
      role: 'owner',
      accountId: 'default',
    });
    old.sessionToken = (
      await new SessionRepository(store, { idleMs: 3_600_000, maxAgeMs: 86_400_000 }).create(owner.id, 'default')
    ).token;
    const workspaces = new WorkspaceRepository(store);
    const ws = await workspaces.create('default', 'team');
    await workspaces.requestYam('default', ws.id);
    await workspaces.finishYam(ws.id, { ok: true });
    const projects = new ProjectRepository(store, cipher);
    const project = await projects.create({
      accountId: 'default',
      workspaceId: ws.id,
      name: 'p',
      provider: 'openai',
      model: 'gpt-4o-mini',
      temperature: null,
      providerApiKey: old.providerKey,
    });
    old.projectId = project.project.id;
    const apps = new AppRepository(store, cipher);
    const app = await apps.create(
      AppRepository.newAppId(),
      {
        accountId: 'default',
        workspaceId: ws.id,
        name: 'site',
        env: { TOKEN: 'env secret' },
        apiKeyEnv: null,
        healthPath: '/',
      },
      null,
    );
    await apps.createDeployment(app, { kind: 'archive', bytes: 10 });
    new ResponseRepository(store, 30).put({
      id: 'resp_old',
      accountId: 'default',
      response: { id: 'resp_old', object: 'response' },
      inputItems: [],
      history: [],
    });
  } finally {
    await store.close();
  }
}

/** Every record of every table, as JSON, from any RecordStore. */
function dump(store: {
  dbs: Record<string, { getRange(): Iterable<{ key: unknown; value: unknown }> }>;
}): Record<string, string[]> {
  return Object.fromEntries(
    TABLE_NAMES.map((t) => [t, [...store.dbs[t]!.getRange()].map((e) => JSON.stringify([e.key, e.value]))]),
  );
}

beforeAll(async () => {
  dataDir = fs.mkdtempSync(path.join(os.tmpdir(), 'hearth-pg-import-'));
  await fillDataDir(dataDir);
  url = await pgServer.server.createDatabase();
}, 60_000);

afterAll(() => stopThenRemove(hearth, dataDir));

describe('hearth db import', () => {
  it('copies every record of every kind, equal, and refuses to run twice into the same database', async () => {
    const first = hearthCli(['db', 'import', '--data-dir', dataDir, '--database-url', url, '--json']);
    expect(first.stderr).toBe('');
    expect(first.status).toBe(0);
    const counts = JSON.parse(first.stdout) as Record<string, number>;
    for (const t of [
      'apiKeys',
      'users',
      'sessions',
      'setupTokens',
      'workspaces',
      'projects',
      'apps',
      'deployments',
      'responses',
      'index',
      'accounts',
    ])
      expect(counts[t], t).toBeGreaterThan(0);

    const lmdb = HearthStore.open(dataDir);
    const pg = await PostgresStore.open(url);
    try {
      expect(dump(pg as never)).toEqual(dump(lmdb as never));
    } finally {
      await pg.close();
      await lmdb.close();
    }
    const again = hearthCli(['db', 'import', '--data-dir', dataDir, '--database-url', url]);
    expect(again.status).toBe(1);
    expect(again.stderr).toMatch(/already holds \d+ records/);
    expect(hearthCli(['db', 'migrate', '--database-url', url]).stdout).toMatch(/up to date/);
  });
});

describe('hearth serve --database-url', () => {
  it('serves the old key, session and provider key; sign-in, key creation and inference work', async () => {
    const model = await tinyChatModel();
    const secretKey = loadMasterKey({ secretKey: undefined, dataDir }).key.toString('hex');
    // A fresh data dir: nothing may come from LMDB any more. `keys create` runs against the database too.
    hearth = await startHearthProcess({
      args: ['--model', model],
      env: { HEARTH_DATABASE_URL: url, HEARTH_SECRET_KEY: secretKey },
    });
    await hearth.waitReady();
    const models = await callApi(hearth, 'GET', '/api/inference/v1/models', undefined, { key: old.key });
    expect(models.status).toBe(200);
    const me = await fetch(`${hearth.baseUrl}/api/v1/keys`, {
      headers: { cookie: `hearth_session=${old.sessionToken}` },
    });
    expect(me.status).toBe(200);
    const health = (await (await fetch(`${hearth.baseUrl}/health`)).json()) as {
      store: { backend: string; up: boolean };
    };
    expect(health.store).toEqual({ backend: 'postgres', up: true });

    const signIn = await fetch(`${hearth.baseUrl}/api/v1/session`, {
      method: 'POST',
      headers: { 'content-type': 'application/json', origin: hearth.baseUrl },
      body: JSON.stringify({ email: 'owner@example.com', password: PASSWORD }),
    });
    expect(signIn.status).toBe(204);
    const created = await callApi<{ key: string; id: string }>(hearth, 'POST', '/api/v1/keys', { name: 'new' });
    expect(created.status).toBe(201);
    const chat = await callApi<{ choices: unknown[] }>(
      hearth,
      'POST',
      '/api/inference/v1/chat/completions',
      { model: `local/${path.basename(model, '.gguf')}`, messages: [{ role: 'user', content: 'hi' }], max_tokens: 4 },
      { key: created.body.key },
    );
    expect(chat.status, JSON.stringify(chat.body)).toBe(200);
    expect(chat.body.choices).toHaveLength(1);

    const stored = await callApi<{ id: string }>(
      hearth,
      'POST',
      '/api/inference/v1/responses',
      { model: `local/${path.basename(model, '.gguf')}`, input: 'hi', max_output_tokens: 4, store: true },
      { key: created.body.key },
    );
    expect(stored.status, JSON.stringify(stored.body)).toBe(200);
    expect(
      (
        await callApi(hearth, 'GET', `/api/inference/v1/responses/${stored.body.id}`, undefined, {
          key: created.body.key,
        })
      ).status,
    ).toBe(200);
    expect(
      (await callApi(hearth, 'GET', '/api/inference/v1/responses/resp_old', undefined, { key: old.key })).status,
    ).toBe(200);

    const listed = hearthCli(['keys', 'list', '--database-url', url, '--json']);
    expect(listed.status, listed.stderr).toBe(0);
    expect((JSON.parse(listed.stdout) as { id: string }[]).map((k) => k.id)).toEqual(
      expect.arrayContaining([old.keyId, created.body.id]),
    );

    const store = await PostgresStore.open(url);
    try {
      const projects = new ProjectRepository(store, new ProviderKeyCipher(Buffer.from(secretKey, 'hex')));
      expect(projects.providerKeyOf(projects.getById(old.projectId)!)).toBe(old.providerKey);
      expect(store.dbs.responses.get(stored.body.id)?.accountId).toBe('default'); // committed, not only in the server's memory
    } finally {
      await store.close();
    }
  });

  it('database stopped: a write answers 503 store_unavailable, /health says why, a known key still reads; restarted: it recovers', async () => {
    const h = hearth!;
    await pgServer.server.stop();
    try {
      const write = await callApi<{ error: { code: string; type: string } }>(
        h,
        'POST',
        '/api/v1/keys',
        { name: 'while down' },
        { timeoutMs: 20_000 },
      );
      expect(write.status).toBe(503);
      expect(write.body.error).toMatchObject({ code: 'store_unavailable', type: 'unavailable_error' });
      expect(Number(write.headers.get('retry-after'))).toBeGreaterThan(0);
      const health = await waitFor(
        async () => (await (await fetch(`${h.baseUrl}/health`)).json()) as { store: { up: boolean; error?: string } },
        (b) => !b.store.up,
        'health to say the store is down',
      );
      expect(health.store.error).toBeTruthy();
      expect((await callApi(h, 'GET', '/api/inference/v1/models', undefined, { key: old.key })).status).toBe(200);
    } finally {
      await pgServer.server.start();
    }
    await waitFor(
      async () => (await callApi(h, 'POST', '/api/v1/keys', { name: 'after' })).status,
      (s) => s === 201,
      'a key created once the database is back',
      { timeoutMs: 20_000 },
    );
    const metrics = await (await fetch(`${h.baseUrl}/metrics`)).text();
    expect(metrics).toMatch(/^hearth_store_up 1$/m);
  });
});
