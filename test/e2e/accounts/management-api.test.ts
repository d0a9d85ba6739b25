import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { FakeModelHub } from '../../fakes/fake-model-hub.ts';
import { type FakeUpstream, providerBaseUrls, startFakeUpstream } from '../../fakes/index.ts';
import { type HearthProcess, hearthCli, createKey, serveFlags } from '../../helpers/hearth-process.ts';
import { startPullingServer } from '../../helpers/pulling-server.ts';
import { type ApiAnswer, callApi, waitFor } from '../../helpers/management-client.ts';
import { secretPart } from '../../helpers/credentials.ts';

/**
 * The management API end to end, on the real CLI server: workspaces, Yams, keys and inference projects,
 * and every error condition of service-spec section 7. The shared model is pulled from a local hub that
 * holds the download, so the shared endpoint stays warming up for the whole file (and the project
 * endpoints, which do not need it, work meanwhile). Provisioning is delayed (--provision-delay-ms) so the
 * intermediate states (`creating`, `provisioning`) can be observed; tests then poll for `ready`.
 */
let hearth: HearthProcess;
let hub: FakeModelHub;
let openai: FakeUpstream;
let otherKey: string;
const PROVIDER_KEY = 'prov-openai-key-0123456789-ABCD';
const PROVISION_DELAY_MS = 2000;

beforeAll(async () => {
  openai = await startFakeUpstream('openai', { apiKey: PROVIDER_KEY, reply: { text: 'Hello from upstream.' } });
  ({ hearth, hub } = await startPullingServer(
    serveFlags({
      'provision-delay-ms': PROVISION_DELAY_MS,
      ...providerBaseUrls({ openai }),
      'provider-max-retries': 0,
      'pull-stall-timeout-ms': 600000,
    }),
  ));
  otherKey = createKey(hearth.dataDir, 'other', {}, 'someone-else');
});

afterAll(async () => {
  hub?.release();
  await hearth?.stop();
  await openai?.close();
  await hub?.close();
});

type ErrorBody = {
  error: { message: string; type: string; code: string | null; param: string | null; state?: string };
};

async function api<T = Record<string, unknown>>(
  method: string,
  url: string,
  body?: unknown,
  key: string | null = hearth.key,
): Promise<ApiAnswer<T>> {
  // One event-loop turn first: a synchronous CLI run (spawnSync) can block this process past the server's
  // ~10 s idle time-out; the turn lets fetch see the pooled connections the server closed meanwhile instead
  // of sending a POST into one (an 'other side closed' that is the test's doing, not the server's).
  await new Promise((resolve) => setImmediate(resolve));
  const r = await callApi<T>(hearth, method, url, body, { key });
  expect(r.headers.get('content-type')).toBe('application/json');
  return r;
}

const chat = (
  projectId: string,
  token: string | null,
  body: unknown = { model: 'gpt-4o-mini', messages: [{ role: 'user', content: 'Hi' }] },
) => api<Record<string, unknown> & ErrorBody>('POST', `/api/v1/inference/${projectId}/chat/completions`, body, token);

/** Provisioning takes PROVISION_DELAY_MS and more: a read every 100 ms for 30 s. */
const POLL = { everyMs: 100, timeoutMs: 30_000 };

async function readyWorkspace(name = 'ws'): Promise<string> {
  const ws = await api('POST', '/api/v1/workspaces', { name });
  expect(ws.status).toBe(201);
  const id = ws.body.workspaceId as string;
  expect((await api('PUT', `/api/v1/workspaces/${id}/yam`)).status).toBe(201);
  await waitFor(
    () => api('GET', `/api/v1/workspaces/${id}/yam`),
    (r) => r.body.state === 'ready',
    'the Yam',
    POLL,
  );
  return id;
}

interface CreatedProject {
  projectId: string;
  token: string;
  state: string;
  endpoint: string;
}

async function createProject(
  ws: string,
  over: Record<string, unknown> = {},
): Promise<ApiAnswer<CreatedProject & Record<string, unknown>>> {
  return api('POST', `/api/v1/workspaces/${ws}/inference`, {
    name: 'support bot',
    provider: 'openai',
    model: 'gpt-4o-mini',
    providerApiKey: PROVIDER_KEY,
    temperature: 0.3,
    ...over,
  });
}

/**
 * `hearth projects create --json` of an openai gpt-4o-mini project named `name` in `ws`, with `extra` flags, on the
 * server's data dir while it runs; `env` holds what the CLI reads there (the provider key, a master key).
 */
const cliCreateProject = (ws: string, name: string, env: NodeJS.ProcessEnv, ...extra: string[]) => {
  const project = ['--workspace', ws, '--name', name, '--provider', 'openai', '--model', 'gpt-4o-mini', ...extra];
  return hearthCli(['projects', 'create', ...project, '--data-dir', hearth.dataDir, '--json'], env);
};

const projectState = (ws: string, id: string) => api('GET', `/api/v1/workspaces/${ws}/inference/${id}`);
const untilReady = (ws: string, id: string) =>
  waitFor(
    () => projectState(ws, id),
    (r) => r.body.state === 'ready',
    'the project',
    POLL,
  );

describe('workspaces', () => {
  it('creates, lists, gets and deletes; unknown and foreign ids are the same 404', async () => {
    const created = await api('POST', '/api/v1/workspaces', { name: 'Client A' });
    expect(created.status).toBe(201);
    expect(created.body).toMatchObject({ name: 'Client A', yam: null });
    const id = created.body.workspaceId as string;
    expect(id).toMatch(/^ws_/);

    const list = await api<{ object: string; data: Array<{ workspaceId: string }> }>('GET', '/api/v1/workspaces');
    expect(list.body.object).toBe('list');
    expect(list.body.data.map((w) => w.workspaceId)).toContain(id);
    expect((await api('GET', `/api/v1/workspaces/${id}`)).body).toEqual(created.body);

    const missing = await api<ErrorBody>('GET', '/api/v1/workspaces/ws_doesnotexist0000');
    const foreign = await api<ErrorBody>('GET', `/api/v1/workspaces/${id}`, undefined, otherKey);
    expect(missing.status).toBe(404);
    expect(missing.body.error).toMatchObject({
      code: 'workspace_not_found',
      message: 'Workspace not found',
      type: 'not_found_error',
    });
    expect(foreign.status).toBe(404);
    expect(foreign.body).toEqual(missing.body);
    expect((await api<{ data: unknown[] }>('GET', '/api/v1/workspaces', undefined, otherKey)).body.data).toEqual([]);
    for (const [method, suffix] of [
      ['DELETE', ''],
      ['PUT', '/yam'],
      ['GET', '/yam'],
      ['GET', '/inference'],
    ] as const) {
      const r = await api<ErrorBody>(method, `/api/v1/workspaces/${id}${suffix}`, undefined, otherKey);
      expect([method, suffix, r.status, r.body.error.code]).toEqual([method, suffix, 404, 'workspace_not_found']);
    }

    expect((await api('DELETE', `/api/v1/workspaces/${id}`)).body).toEqual({
      workspaceId: id,
      deleted: true,
      projectsDeleted: 0,
    });
    expect((await api('GET', `/api/v1/workspaces/${id}`)).status).toBe(404);
  });

  it('validates the body, naming the field', async () => {
    for (const [body, param, code] of [
      [{}, 'name', 'missing_required_parameter'],
      [{ name: '  ' }, 'name', 'invalid_value'],
      [{ name: 5 }, 'name', 'invalid_type'],
      [{ name: 'x', color: 'red' }, 'color', 'unknown_parameter'],
    ] as const) {
      const r = await api<ErrorBody>('POST', '/api/v1/workspaces', body);
      expect([r.status, r.body.error.param, r.body.error.code]).toEqual([400, param, code]);
    }
    expect((await api<ErrorBody>('POST', '/api/v1/workspaces', '{"name":')).body.error.code).toBe('invalid_json');
    expect((await api<ErrorBody>('POST', '/api/v1/workspaces', '[1]')).body.error.code).toBe('invalid_type');
  });
});

describe('Yam', () => {
  it('goes creating -> ready; a project needs a ready Yam (409 no_yam_configured)', async () => {
    const ws = (await api('POST', '/api/v1/workspaces', { name: 'yam test' })).body.workspaceId as string;
    const noYam = await createProject(ws);
    expect(noYam.status).toBe(409);
    expect((noYam.body as unknown as ErrorBody).error).toMatchObject({ code: 'no_yam_configured' });
    expect((await api<ErrorBody>('GET', `/api/v1/workspaces/${ws}/yam`)).body.error.code).toBe('yam_not_found');

    const put = await api('PUT', `/api/v1/workspaces/${ws}/yam`);
    expect(put.status).toBe(201);
    expect(put.body).toMatchObject({ workspaceId: ws, state: 'creating', readyAt: null, error: null });
    const whileCreating = await createProject(ws);
    expect(whileCreating.status).toBe(409);
    expect((whileCreating.body as unknown as ErrorBody).error.code).toBe('no_yam_configured');
    const again = await api('PUT', `/api/v1/workspaces/${ws}/yam`);
    expect(again.status).toBe(200); // idempotent: still the same Yam

    const ready = await waitFor(
      () => api('GET', `/api/v1/workspaces/${ws}/yam`),
      (r) => r.body.state === 'ready',
      'the Yam',
      POLL,
    );
    expect(ready.body.readyAt).toEqual(expect.any(String));
    expect((await api('GET', `/api/v1/workspaces/${ws}`)).body.yam).toMatchObject({ state: 'ready' });
    expect((await api('PUT', `/api/v1/workspaces/${ws}/yam`)).body).toMatchObject({ state: 'ready' });
  });
});

describe('inference projects', () => {
  let ws: string;
  beforeAll(async () => {
    ws = await readyWorkspace('projects');
  });

  it('lifecycle: create (provisioning, token once) -> ready -> call -> update -> suspend/resume -> rotate -> delete', async () => {
    const created = await createProject(ws);
    expect(created.status).toBe(201);
    const p = created.body;
    expect(p).toMatchObject({
      workspaceId: ws,
      name: 'support bot',
      provider: 'openai',
      model: 'gpt-4o-mini',
      temperature: 0.3,
      state: 'provisioning',
      providerKey: { last4: 'ABCD' },
    });
    expect(p.projectId).toMatch(/^proj_/);
    expect(p.token).toMatch(/^hp_[a-z0-9]+_/);
    expect(p.endpoint).toBe(`${hearth.baseUrl}/api/v1/inference/${p.projectId}/chat/completions`);
    expect(JSON.stringify(p)).not.toContain(PROVIDER_KEY);

    // Inference project is not ready (still provisioning)
    const early = await chat(p.projectId, p.token);
    expect(early.status).toBe(503);
    expect(early.headers.get('retry-after')).toEqual(expect.stringMatching(/^\d+$/));
    expect(early.body.error).toMatchObject({
      message: 'Inference project is not ready',
      code: 'project_not_ready',
      state: 'provisioning',
    });

    await untilReady(ws, p.projectId);
    const answer = await chat(p.projectId, p.token);
    expect(answer.status).toBe(200);
    expect(answer.body).toMatchObject({
      object: 'chat.completion',
      model: 'gpt-4o-mini',
      choices: [{ message: { role: 'assistant', content: 'Hello from upstream.' } }],
    });
    expect(openai.lastRequest()).toMatchObject({ model: 'gpt-4o-mini', temperature: 0.3 });

    const got = await projectState(ws, p.projectId);
    expect(got.body).not.toHaveProperty('token');
    expect(JSON.stringify(got.body)).not.toContain(PROVIDER_KEY);
    const list = await api<{ data: Array<{ projectId: string }> }>('GET', `/api/v1/workspaces/${ws}/inference`);
    expect(list.body.data.map((x) => x.projectId)).toContain(p.projectId);

    const patched = await api('PATCH', `/api/v1/workspaces/${ws}/inference/${p.projectId}`, {
      name: 'renamed',
      model: 'gpt-4o',
      temperature: 1.1,
    });
    expect(patched.status).toBe(200);
    expect(patched.body).toMatchObject({ name: 'renamed', model: 'gpt-4o', temperature: 1.1, state: 'ready' });
    expect((await chat(p.projectId, p.token)).body.model).toBe('gpt-4o');
    expect(openai.lastRequest()).toMatchObject({ model: 'gpt-4o', temperature: 1.1 });
    await chat(p.projectId, p.token, { model: 'x', messages: [{ role: 'user', content: 'Hi' }], temperature: 0 });
    expect(openai.lastRequest().temperature).toBe(0); // the request's own temperature wins

    const suspended = await api('PATCH', `/api/v1/workspaces/${ws}/inference/${p.projectId}`, { state: 'suspended' });
    expect(suspended.body).toMatchObject({ state: 'suspended' });
    const refused = await chat(p.projectId, p.token);
    expect(refused.status).toBe(503);
    expect(refused.body.error).toMatchObject({
      message: 'Inference project is not ready',
      code: 'project_not_ready',
      state: 'suspended',
    });
    const resumed = await api('PATCH', `/api/v1/workspaces/${ws}/inference/${p.projectId}`, { state: 'ready' });
    expect(resumed.body).toMatchObject({ state: 'provisioning' });
    await untilReady(ws, p.projectId);
    expect((await chat(p.projectId, p.token)).status).toBe(200);

    const rotated = await api<CreatedProject>('POST', `/api/v1/workspaces/${ws}/inference/${p.projectId}/token`);
    expect(rotated.status).toBe(200);
    expect(rotated.body.token).not.toBe(p.token);
    const old = await chat(p.projectId, p.token);
    expect(old.status).toBe(401); // Unauthorized: rotated-away token
    expect(old.body.error).toMatchObject({ message: 'Unauthorized', code: 'invalid_api_key' });
    expect((await chat(p.projectId, rotated.body.token)).status).toBe(200);

    const deleted = await api('DELETE', `/api/v1/workspaces/${ws}/inference/${p.projectId}`);
    expect(deleted.body).toEqual({ projectId: p.projectId, deleted: true });
    expect((await chat(p.projectId, rotated.body.token)).status).toBe(401);
    const gone = await projectState(ws, p.projectId);
    expect(gone.status).toBe(404);
    expect((gone.body as unknown as ErrorBody).error.code).toBe('project_not_found');
  });

  it('a new provider key shows as its last four characters only', async () => {
    const p = (await createProject(ws)).body;
    const r = await api('PATCH', `/api/v1/workspaces/${ws}/inference/${p.projectId}`, {
      providerApiKey: 'another-provider-key-WXYZ',
    });
    expect(r.body.providerKey).toEqual({ last4: 'WXYZ' });
    expect(JSON.stringify(r.body)).not.toContain('another-provider-key');
  });

  it('validation errors name the field', async () => {
    const cases: Array<[Record<string, unknown>, string, string]> = [
      [{ provider: 'cohere' }, 'provider', 'invalid_value'],
      [{ provider: undefined }, 'provider', 'missing_required_parameter'],
      [{ model: undefined }, 'model', 'missing_required_parameter'],
      [{ model: 'has space' }, 'model', 'invalid_value'],
      [{ providerApiKey: '' }, 'providerApiKey', 'invalid_value'],
      [{ providerApiKey: 42 }, 'providerApiKey', 'invalid_type'],
      [{ name: undefined }, 'name', 'missing_required_parameter'],
      [{ temperature: 3 }, 'temperature', 'invalid_value'],
      [{ temperature: 'warm' }, 'temperature', 'invalid_type'],
      [{ tokens: 5 }, 'tokens', 'unknown_parameter'],
    ];
    for (const [over, param, code] of cases) {
      const r = await createProject(ws, over);
      const e = (r.body as unknown as ErrorBody).error;
      expect([JSON.stringify(over), r.status, e.param, e.code]).toEqual([JSON.stringify(over), 400, param, code]);
    }
    const provider = await createProject(ws, { provider: 'cohere' });
    expect((provider.body as unknown as ErrorBody).error.message).toContain('openai, anthropic, gemini, mistral');

    const p = (await createProject(ws)).body;
    for (const [body, param] of [
      [{ provider: 'gemini' }, 'provider'],
      [{ state: 'paused' }, 'state'],
      [{}, null],
      [{ temperature: -1 }, 'temperature'],
    ] as const) {
      const r = await api<ErrorBody>('PATCH', `/api/v1/workspaces/${ws}/inference/${p.projectId}`, body);
      expect([r.status, r.body.error.param]).toEqual([400, param]);
    }
  });

  it("Unauthorized: missing, invalid, rotated-away (above) and another project's token; unknown project ids too", async () => {
    const a = (await createProject(ws)).body;
    const b = (await createProject(ws)).body;
    await untilReady(ws, a.projectId);
    await untilReady(ws, b.projectId);
    const cases: Array<[string, string | null]> = [
      ['missing', null],
      ['not a token', 'nonsense'],
      ['an API key instead', hearth.key],
      ['a tampered secret', `${a.token.slice(0, -2)}zz`],
      ["another project's token", b.token],
    ];
    for (const [what, token] of cases) {
      const r = await chat(a.projectId, token);
      expect([what, r.status, r.body.error.message, r.body.error.code]).toEqual([
        what,
        401,
        'Unauthorized',
        'invalid_api_key',
      ]);
      expect(r.headers.get('www-authenticate')).toBe('Bearer');
    }
    // An unknown project id answers 401 like a wrong token: existence is not revealed.
    const unknown = await chat('proj_doesnotexist0000', a.token);
    expect([unknown.status, unknown.body.error.code]).toEqual([401, 'invalid_api_key']);
    expect((await chat(a.projectId, a.token)).status).toBe(200);
  });

  it('management routes need an account API key', async () => {
    for (const key of [null, 'hk_nosuchkey_aaaaaaaaaaaaaaaaaaaaaaaa', 'hp_x_yyyyyyyyyyyyyyyyyyyy']) {
      const r = await api<ErrorBody>('GET', '/api/v1/workspaces', undefined, key);
      expect([r.status, r.body.error.message]).toEqual([401, 'Unauthorized']);
    }
  });

  it('Provider configuration missing: a provider key stored under another master key', async () => {
    // The CLI works on the same data dir; with a different master key the stored key is unreadable to the server.
    const r = cliCreateProject(ws, 'wrong master key', {
      HEARTH_SECRET_KEY: 'cd'.repeat(32),
      HEARTH_PROVIDER_API_KEY: PROVIDER_KEY,
    });
    expect([r.status, r.stderr]).toEqual([0, '']);
    const p = JSON.parse(r.stdout) as CreatedProject;
    expect(p.state).toBe('ready');
    const answer = await chat(p.projectId, p.token);
    expect(answer.status).toBe(500);
    expect(answer.body.error).toMatchObject({ code: 'provider_configuration_missing' });
    expect(answer.body.error.message).toMatch(/^Provider configuration missing: /);
    // Setting the key again through the API repairs it.
    await api('PATCH', `/api/v1/workspaces/${ws}/inference/${p.projectId}`, { providerApiKey: PROVIDER_KEY });
    expect((await chat(p.projectId, p.token)).status).toBe(200);
  });

  it('deleting a workspace removes its projects: their tokens stop working at once', async () => {
    const doomed = await readyWorkspace('doomed');
    const p = (await createProject(doomed)).body;
    await untilReady(doomed, p.projectId);
    expect((await chat(p.projectId, p.token)).status).toBe(200);
    expect((await api('DELETE', `/api/v1/workspaces/${doomed}`)).body).toEqual({
      workspaceId: doomed,
      deleted: true,
      projectsDeleted: 1,
    });
    expect((await chat(p.projectId, p.token)).status).toBe(401);
    expect((await api('GET', `/api/v1/workspaces/${doomed}/inference/${p.projectId}`)).status).toBe(404);
  });
});

describe('CLI', () => {
  const cli = (...args: string[]) => {
    const r = hearthCli([...args, '--data-dir', hearth.dataDir, '--json']);
    expect([args.join(' '), r.status, r.stderr]).toEqual([args.join(' '), 0, '']);
    return JSON.parse(r.stdout) as Record<string, unknown>;
  };

  it('mirrors the API on the same data dir while the server runs', async () => {
    const ws = cli('workspaces', 'create', '--name', 'from the CLI').workspaceId as string;
    expect(cli('workspaces', 'yam', ws)).toMatchObject({ workspaceId: ws, state: 'ready' });
    expect((await api('GET', `/api/v1/workspaces/${ws}`)).body).toMatchObject({
      name: 'from the CLI',
      yam: { state: 'ready' },
    });
    const r = cliCreateProject(ws, 'cli bot', { HEARTH_PROVIDER_API_KEY: PROVIDER_KEY }, '--temperature', '0.2');
    const p = JSON.parse(r.stdout) as CreatedProject;
    expect(p).toMatchObject({ state: 'ready', temperature: 0.2 });
    expect((await chat(p.projectId, p.token)).status).toBe(200);
    expect(cli('projects', 'update', p.projectId, '--workspace', ws, '--state', 'suspended')).toMatchObject({
      state: 'suspended',
    });
    expect((await chat(p.projectId, p.token)).body.error.code).toBe('project_not_ready');
    expect(
      cli('projects', 'update', p.projectId, '--workspace', ws, '--state', 'ready', '--temperature', 'none'),
    ).toMatchObject({ state: 'ready', temperature: null });
    const rotated = cli('projects', 'rotate-token', p.projectId, '--workspace', ws).token as string;
    expect((await chat(p.projectId, p.token)).status).toBe(401);
    expect((await chat(p.projectId, rotated)).status).toBe(200);
    expect(cli('projects', 'list', '--workspace', ws)).toEqual([
      expect.objectContaining({ projectId: p.projectId, providerKey: { last4: 'ABCD' } }),
    ]);
    expect(cli('workspaces', 'delete', ws)).toEqual({ workspaceId: ws, deleted: true, projectsDeleted: 1 });
    expect((await chat(p.projectId, rotated)).status).toBe(401);
  });

  it('explains usage and errors', () => {
    for (const command of ['workspaces', 'projects']) {
      const help = hearthCli([command, '--help']);
      expect(help.status).toBe(0);
      expect(help.stdout).toContain(`Usage: hearth ${command}`);
    }
    const missing = hearthCli(['workspaces', 'get', 'ws_nosuch', '--data-dir', hearth.dataDir]);
    expect([missing.status, missing.stderr.trim()]).toEqual([1, 'hearth workspaces: Workspace not found']);
    const badProvider = hearthCli([
      'projects',
      'create',
      '--workspace',
      'ws_x',
      '--name',
      'n',
      '--provider',
      'cohere',
      '--data-dir',
      hearth.dataDir,
    ]);
    expect(badProvider.status).toBe(1);
    const usage = hearthCli(['projects', 'list', '--data-dir', hearth.dataDir]);
    expect([usage.status, usage.stderr]).toEqual([2, expect.stringContaining('needs --workspace')]);
  });
});

describe('API keys of the account', () => {
  it('creates (shown once), lists without secrets, and revokes; another account cannot revoke it', async () => {
    const created = await api<{ id: string; key: string; name: string; accountId: string }>('POST', '/api/v1/keys', {
      name: 'ci',
    });
    expect(created.status).toBe(201);
    expect(created.body).toMatchObject({ name: 'ci', accountId: 'default' });
    expect(created.body.key).toMatch(/^hk_/);
    expect((await api('GET', '/api/v1/workspaces', undefined, created.body.key)).status).toBe(200);
    const list = await api('GET', '/api/v1/keys');
    expect(JSON.stringify(list.body)).toContain(created.body.id);
    expect(JSON.stringify(list.body)).not.toContain(secretPart(created.body.key));
    expect(JSON.stringify((await api('GET', '/api/v1/keys', undefined, otherKey)).body)).not.toContain(created.body.id);

    const foreign = await api<ErrorBody>('DELETE', `/api/v1/keys/${created.body.id}`, undefined, otherKey);
    expect([foreign.status, foreign.body.error.code]).toEqual([404, 'key_not_found']);
    expect((await api('DELETE', `/api/v1/keys/${created.body.id}`)).body).toEqual({
      id: created.body.id,
      revoked: true,
    });
    expect((await api('GET', '/api/v1/workspaces', undefined, created.body.key)).status).toBe(401);
  });
});

describe('warming up and metrics', () => {
  it('the shared endpoint answers 503 model_warming_up with Retry-After: 120 while projects serve', async () => {
    const r = await api<ErrorBody>('POST', '/api/inference/v1/chat/completions', {
      model: 'someone/tiny-chat',
      messages: [{ role: 'user', content: 'hi' }],
    });
    expect(r.status).toBe(503);
    expect(r.headers.get('retry-after')).toBe('120');
    expect(r.body.error.code).toBe('model_warming_up');
  });

  it('records provider metrics with closed-set labels only', async () => {
    const text = await (await fetch(`${hearth.baseUrl}/metrics`)).text();
    expect(text).toMatch(/hearth_provider_request_duration_seconds_count\{provider="openai",outcome="success"\} [1-9]/);
    const labelled = text.split('\n').filter((l) => l.startsWith('hearth_') && l.includes('{'));
    expect(labelled.join('\n')).not.toMatch(/ws_|proj_|hp_|hk_/);
  });
});
