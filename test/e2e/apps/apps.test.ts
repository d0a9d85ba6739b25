import fs from 'node:fs';
import http from 'node:http';
import os from 'node:os';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { probeAppArchive, probeAppRepository, rawArchive } from '../../helpers/app-archives.ts';
import { type HearthProcess, startHearthProcess } from '../../helpers/hearth-process.ts';
import { callApi, type PollOptions, until } from '../../helpers/management-client.ts';
import { tinyModel } from '../../helpers/test-model.ts';

/**
 * Applications on the Yam, end to end: the real `hearth serve` (instant engine on the project's tiny
 * GGUF), real bubblewrap sandboxes, real app processes (test/fixtures/apps/probe-app, no dependencies).
 * One app ("main") is deployed once and shared by the tests that only read it (proxy, isolation, SSE,
 * key); the tests that change what is live (failing release, rollback, env, crash) follow in order on it.
 */
const BODY_LIMIT = 256 * 1024;
const MAX_FILES = 40;
const MAX_BYTES = 300 * 1024;

let hearth: HearthProcess;
let dataDir: string;
let modelId: string;
let ws: string;
let mainApp: string;
let firstDeployment: string;
const bareRepos: string[] = [];
const hearthArgs = (model: string) => [
  '--model',
  model,
  '--engine',
  'instant',
  '--app-start-timeout',
  '10',
  '--app-grace-period',
  '1',
  '--app-max-files',
  String(MAX_FILES),
  '--app-max-unpacked-bytes',
  String(MAX_BYTES),
  '--app-archive-limit',
  String(512 * 1024),
  '--app-proxy-body-limit',
  String(BODY_LIMIT),
  // "deploying from a repository" clones local bare repositories (the default allows public http(s) hosts only).
  '--app-repositories',
  'local',
];

beforeAll(async () => {
  const model = await tinyModel();
  dataDir = fs.mkdtempSync(path.join(os.tmpdir(), 'hearth-apps-'));
  hearth = await startHearthProcess({ args: hearthArgs(model), dataDir });
  await hearth.waitReady();
  modelId = (
    (await (
      await fetch(`${hearth.baseUrl}/api/inference/v1/models`, { headers: { authorization: `Bearer ${hearth.key}` } })
    ).json()) as { data: Array<{ id: string }> }
  ).data[0]!.id;
  ws = (await api<{ workspaceId: string }>('POST', '/api/v1/workspaces', { name: 'apps' })).body.workspaceId;
  expect((await api('PUT', `/api/v1/workspaces/${ws}/yam`)).status).toBe(201);
  await until(
    async () => (await api<{ state: string }>('GET', `/api/v1/workspaces/${ws}/yam`)).body.state === 'ready',
    'the Yam to be ready',
    APPS_POLL,
  );
}, 60_000);

afterAll(async () => {
  await hearth?.stop();
  for (const dir of [...bareRepos, dataDir]) if (dir) fs.rmSync(dir, { recursive: true, force: true });
});

/** The management API with the process's key, or `opts.key`; a Buffer body goes as it is, with `opts.type`. */
const api = <T = Record<string, unknown>>(
  method: string,
  url: string,
  body?: unknown,
  opts: { type?: string; key?: string } = {},
) => callApi<T>(hearth, method, url, body, { contentType: opts.type, key: opts.key });
/** Apps take their time: a poll every 150 ms for 30 s, quoting the server's log when it gives up. */
const APPS_POLL: PollOptions = { timeoutMs: 30_000, everyMs: 150, logs: () => hearth.logs() };

interface DeploymentView {
  deploymentId: string;
  state: string;
  reason: string | null;
  buildLog: string[];
  source: { kind: string; why?: string; commit?: string | null };
  codeFrom: string;
}
interface AppView {
  appId: string;
  state: string;
  url: string;
  envNames: string[];
  apiKeyEnv: string | null;
  liveDeploymentId: string | null;
}
type ErrorBody = { error: { message: string; type: string; code: string | null; param: string | null } };

const appUrl = (appId: string) => `/api/v1/workspaces/${ws}/apps/${appId}`;

async function createApp(name: string, extra: Record<string, unknown> = {}): Promise<string> {
  const r = await api<AppView>('POST', `/api/v1/workspaces/${ws}/apps`, { name, ...extra });
  expect(r.status).toBe(201);
  return r.body.appId;
}

async function deployArchive(appId: string, archive: Buffer): Promise<DeploymentView> {
  const r = await api<DeploymentView>('POST', `${appUrl(appId)}/deployments`, archive, { type: 'application/gzip' });
  expect(r.status, JSON.stringify(r.body)).toBe(202);
  expect(r.body.state).toBe('queued');
  return r.body;
}

async function settled(appId: string, deploymentId: string): Promise<DeploymentView> {
  let last: DeploymentView | undefined;
  await until(
    async () => {
      last = (await api<DeploymentView>('GET', `${appUrl(appId)}/deployments/${deploymentId}`)).body;
      return last.state === 'live' || last.state === 'failed';
    },
    `deployment ${deploymentId} to settle`,
    APPS_POLL,
  );
  return last!;
}

async function whoami(appId: string): Promise<{
  status: number;
  body: {
    version: string;
    uid: number;
    gid: number;
    pid: number;
    env: Record<string, string>;
    url: string;
    forwarded: Record<string, string>;
  };
}> {
  const r = await fetch(`${hearth.baseUrl}/apps/${appId}/whoami`);
  return { status: r.status, body: (await r.json()) as never };
}

async function probe(appId: string, target: string): Promise<{ readable: boolean; code?: string }> {
  return (await (
    await fetch(`${hearth.baseUrl}/apps/${appId}/probe?path=${encodeURIComponent(target)}`)
  ).json()) as never;
}

describe('deploying from an archive', () => {
  it('answers app_not_live with Retry-After before anything is deployed', async () => {
    mainApp = await createApp('main', {
      env: { HEARTH_BASE_URL: 'http://127.0.0.1:1', GREETING: 'hello' },
      apiKeyEnv: 'HEARTH_API_KEY',
    });
    const r = await fetch(`${hearth.baseUrl}/apps/${mainApp}/whoami`);
    expect(r.status).toBe(503);
    expect(Number(r.headers.get('retry-after'))).toBeGreaterThan(0);
    expect(((await r.json()) as ErrorBody).error.code).toBe('app_not_live');
    const view = (await api<AppView & { env?: unknown }>('GET', appUrl(mainApp))).body;
    expect(view).toMatchObject({
      state: 'created',
      envNames: ['GREETING', 'HEARTH_BASE_URL'],
      apiKeyEnv: 'HEARTH_API_KEY',
      liveDeploymentId: null,
      url: `${hearth.baseUrl}/apps/${mainApp}/`,
    });
    expect(JSON.stringify(view)).not.toContain('hello'); // env values are never shown back
  });

  it('unpacks, builds, health-checks and puts the deployment live behind the proxy', async () => {
    // HEARTH_BASE_URL is only known now (the server picked its port): set it before the first deployment.
    expect((await api('PATCH', appUrl(mainApp), { env: { HEARTH_BASE_URL: hearth.baseUrl } })).status).toBe(200);
    const dep = await deployArchive(mainApp, probeAppArchive({ version: 'v1', healthy: true }));
    const done = await settled(mainApp, dep.deploymentId);
    expect(done.state, done.reason ?? '').toBe('live');
    expect(done.buildLog.join('\n')).toContain('healthy: GET /health');
    firstDeployment = dep.deploymentId;
    const app = (await api<AppView>('GET', appUrl(mainApp))).body;
    expect(app).toMatchObject({ state: 'running', liveDeploymentId: dep.deploymentId });

    const r = await fetch(`${hearth.baseUrl}/apps/${mainApp}/whoami?x=1&y=two`);
    expect(r.status).toBe(200);
    const body = (await r.json()) as Awaited<ReturnType<typeof whoami>>['body'];
    expect(body.version).toBe('v1');
    expect(body.url).toBe('/whoami?x=1&y=two');
    expect(body.forwarded).toEqual({ prefix: `/apps/${mainApp}`, for: '127.0.0.1', proto: 'http' });
    // Pages of apps run in an opaque origin: they cannot use a dashboard session on the same host.
    expect(r.headers.get('content-security-policy')).toMatch(/^sandbox allow-scripts/);
  });

  it('streams request bodies to the app and back, and refuses one over the proxy body limit', async () => {
    const payload = Buffer.alloc(200 * 1024, 'abcdefgh');
    const r = await fetch(`${hearth.baseUrl}/apps/${mainApp}/echo`, {
      method: 'POST',
      body: payload,
      headers: { 'content-type': 'application/octet-stream' },
    });
    expect(r.status).toBe(200);
    expect(Buffer.from(await r.arrayBuffer()).equals(payload)).toBe(true);
    // On its own connection: Hearth answers 413 and closes it while the client may still be uploading.
    const big = await new Promise<{ status: number; body: string }>((resolve, reject) => {
      const req = http.request(
        `${hearth.baseUrl}/apps/${mainApp}/echo`,
        { method: 'POST', agent: false, headers: { 'content-length': BODY_LIMIT + 1 } },
        (res) => {
          let body = '';
          res.on('data', (d: Buffer) => (body += d.toString()));
          res.on('end', () => resolve({ status: res.statusCode!, body }));
        },
      );
      req.on('error', reject);
      req.end(Buffer.alloc(BODY_LIMIT + 1, 'x'));
    });
    expect(big.status).toBe(413);
    expect((JSON.parse(big.body) as ErrorBody).error.code).toBe('payload_too_large');
  });

  it('passes an SSE stream through event by event', async () => {
    const r = await fetch(`${hearth.baseUrl}/apps/${mainApp}/sse?gap=700`);
    expect(r.headers.get('content-type')).toBe('text/event-stream');
    const reader = r.body!.getReader();
    const decoder = new TextDecoder();
    const first = decoder.decode((await reader.read()).value);
    // The app waits 700 ms between events: a buffering proxy would deliver all three in one piece.
    expect(first).toContain('"n":1');
    expect(first).not.toContain('"n":2');
    let rest = '';
    for (;;) {
      const next = await reader.read();
      if (next.done) break;
      rest += decoder.decode(next.value);
    }
    expect(rest).toContain('"n":2');
    expect(rest).toContain('"n":3');
  });

  it('forwards a client disconnect to the app', async () => {
    const controller = new AbortController();
    const r = await fetch(`${hearth.baseUrl}/apps/${mainApp}/hang`, { signal: controller.signal });
    const reader = r.body!.getReader();
    expect(new TextDecoder().decode((await reader.read()).value)).toContain('first');
    controller.abort();
    await until(
      async () => {
        const logs = (await api<{ data: Array<{ line: string }> }>('GET', `${appUrl(mainApp)}/logs?lines=50`)).body
          .data;
        return logs.some((l) => l.line.includes('client of /hang went away'));
      },
      'the app to see the client leave',
      APPS_POLL,
    );
  });

  it('follows the logs as an SSE stream', async () => {
    const r = await fetch(`${hearth.baseUrl}${appUrl(mainApp)}/logs?follow=1&lines=0`, {
      headers: { authorization: `Bearer ${hearth.key}` },
    });
    expect(r.status).toBe(200);
    expect(r.headers.get('content-type')).toContain('text/event-stream');
    const reader = r.body!.getReader();
    const decoder = new TextDecoder();
    let text = '';
    await fetch(`${hearth.baseUrl}/apps/${mainApp}/hang`).then((h) => h.body!.cancel());
    while (!text.includes('client of /hang went away')) text += decoder.decode((await reader.read()).value);
    const event = text.split('\n\n').find((e) => e.includes('client of /hang'))!;
    expect(JSON.parse(event.replace(/^data: /, ''))).toMatchObject({
      stream: 'stdout',
      line: 'client of /hang went away',
    });
    await reader.cancel();
  });
});

describe('isolation, seen from inside a deployed app', () => {
  it('runs as an unprivileged uid in its own pid namespace with exactly its environment', async () => {
    const { body } = await whoami(mainApp);
    expect(body.uid).toBe(65534);
    expect(body.gid).toBe(65534);
    expect(body.pid).toBeLessThan(10); // its own pid namespace: Hearth and the host's processes are not there
    const names = Object.keys(body.env).filter((n) => n !== 'PWD'); // PWD is the shell's own
    expect(names.sort()).toEqual([
      'GREETING',
      'HEARTH_API_KEY',
      'HEARTH_API_URL',
      'HEARTH_BASE_URL',
      'HOME',
      'NODE_ENV',
      'PATH',
      'PORT',
    ]);
    expect(body.env.HEARTH_API_URL).toBe(hearth.baseUrl); // Hearth's public port, on the app's own loopback
    expect(body.env.NODE_ENV).toBe('production');
    expect(body.env.GREETING).toBe('hello');
  });

  it("cannot read Hearth's data dir, master key, another app's files or Hearth's environment, nor write the system", async () => {
    const other = await createApp('other');
    const dep = await deployArchive(other, probeAppArchive({ version: 'other', healthy: true }));
    expect((await settled(other, dep.deploymentId)).state).toBe('live');
    const otherRelease = path.join(dataDir, 'apps', ws, other, 'releases', dep.deploymentId);
    expect(fs.existsSync(path.join(otherRelease, 'server.js'))).toBe(true); // it is there, on the host

    expect(await probe(mainApp, dataDir)).toMatchObject({ readable: false });
    expect(await probe(mainApp, path.join(dataDir, 'master.key'))).toMatchObject({ readable: false });
    expect(await probe(mainApp, path.join(dataDir, 'records'))).toMatchObject({ readable: false });
    expect(await probe(mainApp, path.join(otherRelease, 'server.js'))).toMatchObject({ readable: false });
    expect(await probe(mainApp, `/proc/${hearth.proc.pid}/environ`)).toMatchObject({ readable: false });
    expect(await probe(mainApp, '/app/server.js')).toMatchObject({ readable: true }); // its own files are there
    const write = (await (
      await fetch(`${hearth.baseUrl}/apps/${mainApp}/write?path=${encodeURIComponent('/usr/hearth-was-here')}`)
    ).json()) as { written: boolean };
    expect(write.written).toBe(false);
    expect((await api('DELETE', appUrl(other))).status).toBe(200);
  });
});

describe('the app key', () => {
  it('is a key of the account, listed as app:<appId>, and calls the shared endpoint from inside the app', async () => {
    const keys = (await api<{ data: Array<{ name: string; revokedAt: string | null }> }>('GET', '/api/v1/keys')).body
      .data;
    expect(keys.filter((k) => k.name === `app:${mainApp}` && k.revokedAt === null)).toHaveLength(1);
    const r = (await (
      await fetch(`${hearth.baseUrl}/apps/${mainApp}/call-hearth?model=${encodeURIComponent(modelId)}`)
    ).json()) as { status: number; body: string };
    expect(r.status).toBe(200);
    expect((JSON.parse(r.body) as { object: string }).object).toBe('chat.completion');
  });
});

describe('releases', () => {
  it('keeps serving the live release while a failing one never takes traffic', async () => {
    const dep = await deployArchive(mainApp, probeAppArchive({ version: 'broken', healthy: false }));
    let served = 0;
    let settledDep: DeploymentView | undefined;
    while (!settledDep) {
      const w = await whoami(mainApp);
      expect(w.status).toBe(200);
      expect(w.body.version).toBe('v1');
      served++;
      const d = (await api<DeploymentView>('GET', `${appUrl(mainApp)}/deployments/${dep.deploymentId}`)).body;
      if (d.state === 'failed' || d.state === 'live') settledDep = d;
      else await new Promise((r) => setTimeout(r, 200));
    }
    expect(served).toBeGreaterThan(1);
    expect(settledDep.state).toBe('failed');
    expect(settledDep.reason).toMatch(/^health_check_failed: GET \/health did not answer 200/);
    expect((await api<AppView>('GET', appUrl(mainApp))).body.liveDeploymentId).toBe(firstDeployment);
    expect((await whoami(mainApp)).body.version).toBe('v1');
  });

  it('puts a new release live, retires the old one, and rolls back to it', async () => {
    const v2 = await deployArchive(mainApp, probeAppArchive({ version: 'v2', healthy: true }));
    expect((await settled(mainApp, v2.deploymentId)).state).toBe('live');
    expect((await whoami(mainApp)).body.version).toBe('v2');
    expect((await api<DeploymentView>('GET', `${appUrl(mainApp)}/deployments/${firstDeployment}`)).body.state).toBe(
      'retired',
    );

    const rb = await api<DeploymentView>('POST', `${appUrl(mainApp)}/rollback`, { deploymentId: firstDeployment });
    expect(rb.status).toBe(202);
    expect(rb.body).toMatchObject({ source: { kind: 'release', why: 'rollback' }, codeFrom: firstDeployment });
    expect((await settled(mainApp, rb.body.deploymentId)).state).toBe('live');
    expect((await whoami(mainApp)).body.version).toBe('v1');

    const never = (await api<{ data: DeploymentView[] }>('GET', `${appUrl(mainApp)}/deployments`)).body.data.find(
      (d) => d.state === 'failed',
    )!;
    const refused = await api<ErrorBody>('POST', `${appUrl(mainApp)}/rollback`, { deploymentId: never.deploymentId });
    expect(refused.status).toBe(400);
    expect(
      (await api<ErrorBody>('POST', `${appUrl(mainApp)}/rollback`, { deploymentId: 'dep_nope' })).body.error.code,
    ).toBe('deployment_not_found');
  });

  it('starts a new release of the live code when the env changes', async () => {
    const before = (await api<AppView>('GET', appUrl(mainApp))).body.liveDeploymentId;
    const r = await api<AppView>('PATCH', appUrl(mainApp), { env: { GREETING: 'bonjour', EXTRA: 'x' } });
    expect(r.status).toBe(200);
    expect(r.body.envNames).toEqual(['EXTRA', 'GREETING', 'HEARTH_BASE_URL']);
    let release: DeploymentView | undefined;
    await until(
      async () => {
        release = (await api<{ data: DeploymentView[] }>('GET', `${appUrl(mainApp)}/deployments`)).body.data[0];
        return (
          release !== undefined &&
          release.deploymentId !== before &&
          release.source.why === 'env' &&
          release.state === 'live'
        );
      },
      'the env release to go live',
      APPS_POLL,
    );
    expect(release!.codeFrom).toBe(firstDeployment);
    const w = await whoami(mainApp);
    expect(w.body.version).toBe('v1');
    expect(w.body.env.GREETING).toBe('bonjour');
    expect(w.body.env.EXTRA).toBe('x');
    await api('PATCH', appUrl(mainApp), { env: { EXTRA: null } });
    await until(
      async () => !('EXTRA' in (await whoami(mainApp)).body.env),
      'EXTRA to be unset in a new release',
      APPS_POLL,
    );
  });
});

describe('deploying from a repository', () => {
  it('clones a local bare repository at a tag and puts it live', async () => {
    const bare = probeAppRepository({ version: 'from-git', healthy: true }, 'v3');
    bareRepos.push(bare);
    const appId = await createApp('git-app');
    const r = await api<DeploymentView>('POST', `${appUrl(appId)}/deployments`, { repository: bare, ref: 'v3' });
    expect(r.status).toBe(202);
    const done = await settled(appId, r.body.deploymentId);
    expect(done.state, done.reason ?? '').toBe('live');
    expect(done.source.commit).toMatch(/^[0-9a-f]{40}$/);
    expect((await whoami(appId)).body.version).toBe('from-git');

    const missingRef = await api<DeploymentView>('POST', `${appUrl(appId)}/deployments`, {
      repository: `file://${bare}`,
      ref: 'no-such-tag',
    });
    expect(missingRef.status).toBe(202);
    expect((await settled(appId, missingRef.body.deploymentId)).reason).toMatch(
      /^build_failed: ref 'no-such-tag' not found/,
    );
    expect((await whoami(appId)).body.version).toBe('from-git');

    const unreachable = await api<ErrorBody>('POST', `${appUrl(appId)}/deployments`, {
      repository: path.join(os.tmpdir(), 'no-such-repository-here'),
    });
    expect(unreachable.status).toBe(400);
    expect(unreachable.body.error.code).toBe('repository_unreachable');
    expect((await api('DELETE', appUrl(appId))).status).toBe(200);
  });
});

describe('invalid archives', () => {
  const canary = path.join(os.tmpdir(), `hearth-canary-${process.pid}`);
  const cases: Array<[string, () => Buffer]> = [
    [
      'an entry escaping with ../',
      () => rawArchive([{ name: `../../../../../../..${canary}`, typeFlag: '0', body: Buffer.from('x') }]),
    ],
    ['an absolute path', () => rawArchive([{ name: canary, typeFlag: '0', body: Buffer.from('x') }])],
    [
      'a symbolic link pointing outside',
      () =>
        rawArchive([
          { name: 'out', typeFlag: '2', linkName: path.dirname(canary) },
          { name: `out/${path.basename(canary)}`, typeFlag: '0', body: Buffer.from('x') },
        ]),
    ],
    [
      'a relative symbolic link climbing out',
      () => rawArchive([{ name: 'up', typeFlag: '2', linkName: '../../../..' }]),
    ],
    ['a hard link to a file outside', () => rawArchive([{ name: 'passwd', typeFlag: '1', linkName: '/etc/passwd' }])],
    ['a hard link climbing out', () => rawArchive([{ name: 'h', typeFlag: '1', linkName: '../../master.key' }])],
    ['a device file', () => rawArchive([{ name: 'null', typeFlag: '3' }])],
    ['a fifo', () => rawArchive([{ name: 'pipe', typeFlag: '6' }])],
    [
      'too many files',
      () =>
        rawArchive(
          Array.from({ length: MAX_FILES + 1 }, (_, i) => ({
            name: `f${i}.txt`,
            typeFlag: '0',
            body: Buffer.from('x'),
          })),
        ),
    ],
    [
      'too many bytes unpacked',
      () => rawArchive([{ name: 'big.bin', typeFlag: '0', body: Buffer.alloc(MAX_BYTES + 1) }]),
    ],
    ['not gzip', () => Buffer.from('PK\u0003\u0004 this is a zip, not a tar.gz')],
    ['gzip that is not tar', () => rawArchive([]).subarray(0, 10)],
  ];

  it.each(cases)('refuses %s with invalid_archive and writes nothing outside', async (_name, make) => {
    const appId = mainApp;
    const before = (await api<{ data: DeploymentView[] }>('GET', `${appUrl(appId)}/deployments`)).body.data.length;
    const r = await api<ErrorBody>('POST', `${appUrl(appId)}/deployments`, make(), { type: 'application/gzip' });
    expect(r.status, JSON.stringify(r.body)).toBe(400);
    expect(r.body.error.code).toBe('invalid_archive');
    expect(fs.existsSync(canary)).toBe(false);
    expect((await api<{ data: DeploymentView[] }>('GET', `${appUrl(appId)}/deployments`)).body.data.length).toBe(
      before,
    );
    expect(
      fs
        .readdirSync(path.join(dataDir, 'apps', ws, appId, 'releases'))
        .every((d) => fs.existsSync(path.join(dataDir, 'apps', ws, appId, 'releases', d, 'server.js'))),
    ).toBe(true);
  });

  it('refuses an upload over the archive limit with 413', async () => {
    const r = await api<ErrorBody>('POST', `${appUrl(mainApp)}/deployments`, Buffer.alloc(512 * 1024 + 1), {
      type: 'application/gzip',
    });
    expect(r.status).toBe(413);
  });
});

describe('crashes', () => {
  it('marks the app crashed, restarts it with backoff, and counts the restart', async () => {
    const crash = await fetch(`${hearth.baseUrl}/apps/${mainApp}/crash`);
    expect(crash.status).toBe(200);
    await until(
      async () => (await api<AppView>('GET', appUrl(mainApp))).body.state === 'crashed',
      'the app to be crashed',
      APPS_POLL,
    );
    const meanwhile = await fetch(`${hearth.baseUrl}/apps/${mainApp}/whoami`);
    if (meanwhile.status === 503) expect(meanwhile.headers.get('retry-after')).not.toBeNull();
    else await meanwhile.body?.cancel();
    await until(
      async () => (await api<AppView>('GET', appUrl(mainApp))).body.state === 'running',
      'the app to run again',
      APPS_POLL,
    );
    expect((await whoami(mainApp)).status).toBe(200);
    const logs = (
      await api<{ data: Array<{ stream: string; line: string }> }>('GET', `${appUrl(mainApp)}/logs?lines=200`)
    ).body.data;
    expect(logs.some((l) => l.stream === 'hearth' && l.line === 'restarting in 1 s')).toBe(true);
    const metrics = await (await fetch(`${hearth.baseUrl}/metrics`)).text();
    expect(metrics).toMatch(/^hearth_app_restarts_total [1-9]/m);
    expect(metrics).toMatch(/^hearth_app_deployments_total\{result="live"\} [1-9]/m);
    expect(metrics).toMatch(/^hearth_app_deployments_total\{result="failed"\} [1-9]/m);
    expect(metrics).toMatch(/^hearth_apps\{state="running"\} 1$/m);
  });
});

describe('lifecycle', () => {
  it('starts live apps again when Hearth restarts', async () => {
    const before = await whoami(mainApp);
    const oldPort = Number(before.body.env.PORT);
    await hearth.stop();
    // Hearth's stop stopped the app too.
    await expect(fetch(`http://127.0.0.1:${oldPort}/health`)).rejects.toThrow();
    hearth = await startHearthProcess({ args: hearthArgs(await tinyModel()), dataDir });
    await until(
      async () => (await api<AppView>('GET', appUrl(mainApp))).body.state === 'running',
      'the app to run after the restart',
      APPS_POLL,
    );
    expect((await whoami(mainApp)).body.version).toBe('v1');
  });

  it('deletes an app: stopped, files removed, its key revoked', async () => {
    const { body } = await whoami(mainApp);
    const key = body.env.HEARTH_API_KEY!;
    const port = Number(body.env.PORT);
    expect(
      (await fetch(`${hearth.baseUrl}/api/inference/v1/models`, { headers: { authorization: `Bearer ${key}` } }))
        .status,
    ).toBe(200);
    const follower = await fetch(`${hearth.baseUrl}${appUrl(mainApp)}/logs?follow=1&lines=0`, {
      headers: { authorization: `Bearer ${hearth.key}` },
    });
    const r = await api<{ deleted: boolean }>('DELETE', appUrl(mainApp));
    expect(r.body).toEqual({ appId: mainApp, deleted: true });
    expect(fs.existsSync(path.join(dataDir, 'apps', ws, mainApp))).toBe(false);
    await expect(fetch(`http://127.0.0.1:${port}/health`)).rejects.toThrow();
    const proxied = await fetch(`${hearth.baseUrl}/apps/${mainApp}/whoami`);
    expect(proxied.status).toBe(404);
    expect(((await proxied.json()) as ErrorBody).error.code).toBe('app_not_found');
    expect(
      (await fetch(`${hearth.baseUrl}/api/inference/v1/models`, { headers: { authorization: `Bearer ${key}` } }))
        .status,
    ).toBe(401);
    expect((await api<ErrorBody>('GET', appUrl(mainApp))).body.error.code).toBe('app_not_found');
    expect(await follower.text()).toContain(': following'); // the log stream ended with the app
  });

  it('deletes the apps of a deleted workspace with it', async () => {
    const doomed = (await api<{ workspaceId: string }>('POST', '/api/v1/workspaces', { name: 'doomed' })).body
      .workspaceId;
    await api('PUT', `/api/v1/workspaces/${doomed}/yam`);
    await until(
      async () => (await api<{ state: string }>('GET', `/api/v1/workspaces/${doomed}/yam`)).body.state === 'ready',
      'the Yam to be ready',
      APPS_POLL,
    );
    const created = await api<AppView>('POST', `/api/v1/workspaces/${doomed}/apps`, {
      name: 'inside',
      apiKeyEnv: 'HEARTH_API_KEY',
    });
    const appId = created.body.appId;
    const dep = await api<DeploymentView>(
      'POST',
      `/api/v1/workspaces/${doomed}/apps/${appId}/deployments`,
      probeAppArchive({ version: 'doomed', healthy: true }),
      { type: 'application/gzip' },
    );
    await until(
      async () =>
        (
          await api<DeploymentView>(
            'GET',
            `/api/v1/workspaces/${doomed}/apps/${appId}/deployments/${dep.body.deploymentId}`,
          )
        ).body.state === 'live',
      'the app to be live',
      APPS_POLL,
    );
    const { body } = await whoami(appId);
    expect((await api('DELETE', `/api/v1/workspaces/${doomed}`)).status).toBe(200);
    await expect(fetch(`http://127.0.0.1:${body.env.PORT}/health`)).rejects.toThrow();
    expect(fs.existsSync(path.join(dataDir, 'apps', doomed))).toBe(false);
    expect((await fetch(`${hearth.baseUrl}/apps/${appId}/whoami`)).status).toBe(404);
    expect(
      (
        await fetch(`${hearth.baseUrl}/api/inference/v1/models`, {
          headers: { authorization: `Bearer ${body.env.HEARTH_API_KEY}` },
        })
      ).status,
    ).toBe(401);
  });
});

describe('the app API refuses', () => {
  it('a workspace without a ready Yam, bad bodies, other media types', async () => {
    const bare = (await api<{ workspaceId: string }>('POST', '/api/v1/workspaces', { name: 'no-yam' })).body
      .workspaceId;
    const noYam = await api<ErrorBody>('POST', `/api/v1/workspaces/${bare}/apps`, { name: 'x' });
    expect(noYam.status).toBe(409);
    expect(noYam.body.error.code).toBe('no_yam_configured');
    const bad = await api<ErrorBody>('POST', `/api/v1/workspaces/${ws}/apps`, { name: 'x', env: { PORT: '1' } });
    expect(bad.status).toBe(400);
    expect(bad.body.error.param).toBe('env.PORT');
    const unknown = await api<ErrorBody>('POST', `/api/v1/workspaces/${ws}/apps`, { name: 'x', image: 'y' });
    expect(unknown.body.error.param).toBe('image');
    const appId = await createApp('media');
    const media = await api<ErrorBody>('POST', `${appUrl(appId)}/deployments`, Buffer.from('x'), {
      type: 'text/plain',
    });
    expect(media.status).toBe(415);
    expect((await api<ErrorBody>('GET', `/api/v1/workspaces/${ws}/apps/app_nope`)).body.error.code).toBe(
      'app_not_found',
    );
    expect((await fetch(`${hearth.baseUrl}/api/v1/workspaces/${ws}/apps`)).status).toBe(401);
  });
});

describe('a Yam where the sandbox cannot run', () => {
  it('fails with a reason naming the missing tool', async () => {
    const other = await startHearthProcess({
      args: ['--model', await tinyModel(), '--engine', 'instant', '--app-bwrap', '/nonexistent/bwrap'],
    });
    try {
      const headers = { authorization: `Bearer ${other.key}`, 'content-type': 'application/json' };
      const wsId = (
        (await (
          await fetch(`${other.baseUrl}/api/v1/workspaces`, { method: 'POST', headers, body: '{"name":"x"}' })
        ).json()) as { workspaceId: string }
      ).workspaceId;
      await fetch(`${other.baseUrl}/api/v1/workspaces/${wsId}/yam`, { method: 'PUT', headers });
      let yam: { state: string; error: string | null } = { state: 'creating', error: null };
      for (let i = 0; i < 100 && yam.state === 'creating'; i++) {
        await new Promise((r) => setTimeout(r, 100));
        yam = (await (await fetch(`${other.baseUrl}/api/v1/workspaces/${wsId}/yam`, { headers })).json()) as typeof yam;
      }
      expect(yam.state).toBe('failed');
      expect(yam.error).toMatch(/bubblewrap .* is not installed/);
      const app = await fetch(`${other.baseUrl}/api/v1/workspaces/${wsId}/apps`, {
        method: 'POST',
        headers,
        body: '{"name":"x"}',
      });
      expect(app.status).toBe(409);
    } finally {
      await other.stop();
    }
  });
});
