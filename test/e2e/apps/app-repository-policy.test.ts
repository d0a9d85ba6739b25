import fs from 'node:fs';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { probeAppRepository } from '../../helpers/app-archives.ts';
import { type DumbGitServer, serveDumbGit } from '../../helpers/dumb-git-server.ts';
import { type HearthProcess, startHearthProcess } from '../../helpers/hearth-process.ts';
import { managementClient } from '../../helpers/management-client.ts';
import { tinyModel } from '../../helpers/test-model.ts';

/**
 * Which repositories a deployment may make Hearth fetch (`--app-repositories`), end to end: the real
 * `hearth serve` in its default mode (public) and in network mode, against a git repository served over
 * http on 127.0.0.1 ("dumb" protocol: static files) by a server that counts every connection it gets.
 * In the default mode no URL of this machine, however spelled, is fetched: each is a 400
 * repository_not_allowed and the server sees no connection.
 */
type ErrorBody = { error: { message: string; type: string; param: string | null; code: string | null } };
interface DeploymentView {
  deploymentId: string;
  state: string;
  reason: string | null;
}

let bare: string;
let server: DumbGitServer | undefined;
let port: number;
let defaultMode: HearthProcess;
let networkMode: HearthProcess;
const clients = new Map<HearthProcess, { ws: string }>();

/** The management API of one of the two servers, and a new app in its workspace. */
function on(hearth: () => HearthProcess) {
  const { api, until } = managementClient(hearth, 70_000);
  const apps = () => `/api/v1/workspaces/${clients.get(hearth())!.ws}/apps`;
  return {
    api,
    until,
    apps,
    async newApp(name: string): Promise<string> {
      const r = await api<{ appId: string }>('POST', apps(), { name });
      expect(r.status).toBe(201);
      return r.body.appId;
    },
  };
}

async function withYam(hearth: HearthProcess): Promise<void> {
  await hearth.waitReady();
  const { readyWorkspace } = managementClient(() => hearth, 70_000);
  const ws = await readyWorkspace('repos');
  clients.set(hearth, { ws });
}

beforeAll(async () => {
  bare = probeAppRepository({ version: 'over-http', healthy: true }, 'v1');
  server = await serveDumbGit(bare, 'probe.git');
  port = server.port;
  const model = await tinyModel();
  defaultMode = await startHearthProcess({ args: ['--model', model, '--engine', 'instant'] });
  networkMode = await startHearthProcess({
    args: ['--model', model, '--engine', 'instant', '--app-start-timeout', '20', '--app-repositories', 'network'],
  });
  await withYam(defaultMode);
  await withYam(networkMode);
}, 120_000);

afterAll(async () => {
  await defaultMode?.stop();
  await networkMode?.stop();
  await server?.close();
  for (const d of [bare, defaultMode?.dataDir, networkMode?.dataDir])
    if (d) fs.rmSync(d, { recursive: true, force: true });
});

describe('the default (--app-repositories public)', () => {
  const d = on(() => defaultMode);

  it('local repositories and every spelling of this machine: 400 repository_not_allowed naming the flag, no connection, no deployment', async () => {
    const appId = await d.newApp('refused');
    const urls = [
      `file://${bare}`,
      bare,
      `http://127.0.0.1:${port}/probe.git`,
      `http://localhost:${port}/probe.git`,
      `http://2130706433:${port}/probe.git`,
      `http://0x7f.1:${port}/probe.git`,
      `http://[::ffff:127.0.0.1]:${port}/probe.git`,
      `http://alice:pa55w0rd-zz@127.0.0.1:${port}/probe.git`,
      `ssh://127.0.0.1:${port}/probe.git`,
      `git://127.0.0.1:${port}/probe.git`,
      'http://169.254.169.254/latest/meta-data/',
    ];
    for (const repository of urls) {
      const r = await d.api<ErrorBody>('POST', `${d.apps()}/${appId}/deployments`, { repository });
      expect(r.status, repository).toBe(400);
      expect(r.body.error, repository).toMatchObject({
        type: 'invalid_request_error',
        param: 'repository',
        code: 'repository_not_allowed',
      });
      expect(r.body.error.message, repository).toMatch(/^Repository not allowed: .*--app-repositories/);
      expect(r.body.error.message).not.toContain('pa55w0rd');
    }
    expect(server!.connections()).toBe(0);
    expect((await d.api<{ data: unknown[] }>('GET', `${d.apps()}/${appId}/deployments`)).body.data).toEqual([]);
  });
});

describe('--app-repositories network', () => {
  const n = on(() => networkMode);

  it('refuses file:// and local paths', async () => {
    const appId = await n.newApp('no-local');
    for (const repository of [`file://${bare}`, bare]) {
      const r = await n.api<ErrorBody>('POST', `${n.apps()}/${appId}/deployments`, { repository });
      expect(r.status, repository).toBe(400);
      expect(r.body.error.code).toBe('repository_not_allowed');
      expect(r.body.error.message).toContain('(--app-repositories network)');
    }
  });

  it('lets git reach an http repository on 127.0.0.1: a missing one is unreachable, a real one goes live', async () => {
    const appId = await n.newApp('lan');
    const before = server!.connections();
    const missing = await n.api<ErrorBody>('POST', `${n.apps()}/${appId}/deployments`, {
      repository: `http://127.0.0.1:${port}/nothing.git`,
    });
    expect(missing.status).toBe(400);
    expect(missing.body.error.code).toBe('repository_unreachable');
    expect(server!.connections()).toBeGreaterThan(before);

    const dep = await n.api<DeploymentView>('POST', `${n.apps()}/${appId}/deployments`, {
      repository: `http://127.0.0.1:${port}/probe.git`,
      ref: 'v1',
    });
    expect(dep.status, JSON.stringify(dep.body)).toBe(202);
    let last!: DeploymentView;
    await n.until(async () => {
      last = (await n.api<DeploymentView>('GET', `${n.apps()}/${appId}/deployments/${dep.body.deploymentId}`)).body;
      return last.state === 'live' || last.state === 'failed';
    }, 'the deployment to settle');
    expect(last.state, last.reason ?? '').toBe('live');
    const whoami = await fetch(`${networkMode.baseUrl}/apps/${appId}/whoami`, { signal: AbortSignal.timeout(10_000) });
    expect(((await whoami.json()) as { version: string }).version).toBe('over-http');
  });
});
