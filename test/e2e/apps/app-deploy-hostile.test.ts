import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { gzipSync } from 'node:zlib';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { BLOCK, encodeHeader } from '../../../src/apps/tar-format.ts';
import { appArchive, bareRepositoryOf, rawArchive } from '../../helpers/app-archives.ts';
import { type HearthProcess, instantModelArgs, startHearthProcess } from '../../helpers/hearth-process.ts';
import { managementClient } from '../../helpers/management-client.ts';
import { tinyModel } from '../../helpers/test-model.ts';

/**
 * Hostile deployments end to end (the real `hearth serve`, real bubblewrap): archives and repository bodies
 * that are answered in the documented error shape (never a 500, no deployment record, nothing written
 * outside), and apps whose own files turn against Hearth: a repository whose package.json is a link to a
 * host file, and an app that makes its Procfile a fifo before it crashes (Hearth reads the Procfile again to
 * restart it). Every request is bounded.
 */
let hearth: HearthProcess;
let ws: string;
const scratch: string[] = [];
const canary = path.join(os.tmpdir(), `hearth-deploy-canary-${process.pid}`);
const SECRET = `host-secret-${process.pid}-7f3a`;
type ErrorBody = { error: { message: string; type: string; param: string | null; code: string | null } };
interface DeploymentView {
  deploymentId: string;
  state: string;
  reason: string | null;
  buildLog: string[];
}

const { api, until, readyWorkspace } = managementClient(() => hearth, 70_000);

const apps = () => `/api/v1/workspaces/${ws}/apps`;

async function newApp(name: string): Promise<string> {
  const r = await api<{ appId: string }>('POST', apps(), { name });
  expect(r.status).toBe(201);
  return r.body.appId;
}

async function settled(appId: string, deploymentId: string): Promise<DeploymentView> {
  let last!: DeploymentView;
  await until(async () => {
    last = (await api<DeploymentView>('GET', `${apps()}/${appId}/deployments/${deploymentId}`)).body;
    return last.state === 'live' || last.state === 'failed';
  }, `deployment ${deploymentId} to settle`);
  return last;
}

/** A bare repository of the files `files` writes into an empty directory; both are removed after the suite. */
function bareRepository(files: (dir: string) => void): string {
  const work = fs.mkdtempSync(path.join(os.tmpdir(), 'hearth-hostile-work-'));
  scratch.push(work);
  files(work);
  const bare = bareRepositoryOf(work);
  scratch.push(bare);
  return bare;
}

beforeAll(async () => {
  hearth = await startHearthProcess({
    args: instantModelArgs(await tinyModel(), {
      'app-start-timeout': 20,
      'app-max-unpacked-bytes': 1 << 20,
      'app-repositories': 'local',
    }),
  });
  await hearth.waitReady();
  ws = await readyWorkspace('hostile');
}, 120_000);

afterAll(async () => {
  await hearth?.stop();
  for (const d of [...scratch, hearth?.dataDir, canary]) if (d) fs.rmSync(d, { recursive: true, force: true });
});

describe('archives', () => {
  const cases: Array<[string, string, () => Buffer]> = [
    ['an empty body', 'not a gzip file', () => Buffer.alloc(0)],
    [
      'a directory then a file of the same name',
      "entry 'a' conflicts",
      () =>
        rawArchive([
          { name: 'a/', typeFlag: '5' },
          { name: 'a', typeFlag: '0', body: Buffer.from('x') },
        ]),
    ],
    [
      'a directory entry carrying 8 MiB of data (an 8 KB gzip)',
      'more than 1048576 bytes',
      () =>
        gzipSync(
          Buffer.concat([
            encodeHeader({ name: 'd/', mode: 0o755, size: 8 << 20, typeFlag: '5' }),
            Buffer.alloc(8 << 20),
            Buffer.alloc(BLOCK * 2),
          ]),
        ),
    ],
    [
      'a link leading out through another link',
      'through another link',
      () =>
        rawArchive([
          { name: 'a/b/', typeFlag: '5' },
          { name: 'a/b/u', typeFlag: '2', linkName: '../..' },
          { name: 'package.json', typeFlag: '2', linkName: 'a/b/u/../..' },
        ]),
    ],
  ];

  it.each(cases)('%s: 400 invalid_archive saying why, no deployment recorded', async (_name, why, make) => {
    const appId = await newApp('archive');
    const r = await api<ErrorBody>('POST', `${apps()}/${appId}/deployments`, make(), 'application/gzip');
    expect(r.status, JSON.stringify(r.body)).toBe(400);
    expect(r.body.error.code).toBe('invalid_archive');
    expect(r.body.error.message).toContain(why);
    expect(r.body.error.message).not.toContain(hearth.dataDir);
    expect((await api<{ data: unknown[] }>('GET', `${apps()}/${appId}/deployments`)).body.data).toEqual([]);
    expect(fs.readdirSync(path.join(hearth.dataDir, 'apps', ws, appId, 'releases'))).toEqual([]);
  });
});

describe('repository bodies', () => {
  it('options, command transports, option-like refs, over-long values and wrong types: 400 naming the field, nothing run', async () => {
    const appId = await newApp('repo');
    const cases: Array<[unknown, string]> = [
      [{ repository: `--upload-pack=touch ${canary}` }, 'repository'],
      [{ repository: ` --upload-pack=touch ${canary}` }, 'repository'],
      [{ repository: `ext::sh -c touch% ${canary}` }, 'repository'],
      [{ repository: 'fd::0' }, 'repository'],
      [{ repository: 'file:///x\nfile:///y' }, 'repository'],
      [{ repository: `https://example.com/${'a'.repeat(3000)}.git` }, 'repository'],
      [{ repository: 42 }, 'repository'],
      [{ repository: '' }, 'repository'],
      [{ repository: 'file:///nonexistent', ref: `--output=${canary}` }, 'ref'],
      [{ repository: 'file:///nonexistent', ref: 'a..b' }, 'ref'],
      [{ repository: 'file:///nonexistent', ref: 'x'.repeat(300) }, 'ref'],
      [{ repository: 'file:///nonexistent', ref: ['main'] }, 'ref'],
      [{ repository: 'file:///nonexistent', extra: 1 }, 'extra'],
    ];
    for (const [body, param] of cases) {
      const r = await api<ErrorBody>('POST', `${apps()}/${appId}/deployments`, body);
      expect(r.status, JSON.stringify(body).slice(0, 80)).toBe(400);
      expect(r.body.error.param, JSON.stringify(body).slice(0, 80)).toBe(param);
    }
    expect(fs.existsSync(canary)).toBe(false);
    expect((await api<{ data: unknown[] }>('GET', `${apps()}/${appId}/deployments`)).body.data).toEqual([]);
  });

  it('an unreachable repository with credentials in its URL: repository_unreachable, the password nowhere in the answer', async () => {
    const appId = await newApp('creds');
    for (const repository of [
      'http://alice:pa55w0rd-zz@127.0.0.1:1/x.git',
      'ssh://alice:pa55w0rd-zz@127.0.0.1:1/x.git',
      'ssh://-oProxyCommand=touch%20' + encodeURIComponent(canary) + '/x',
    ]) {
      const r = await api<ErrorBody>('POST', `${apps()}/${appId}/deployments`, { repository });
      expect(r.status, repository).toBe(400);
      expect(r.body.error.code).toBe('repository_unreachable');
      expect(r.body.error.message).not.toContain('pa55w0rd');
    }
    expect(fs.existsSync(canary)).toBe(false);
  });

  it('a repository whose package.json is a link to a host file: build_failed, nothing of the file in the deployment', async () => {
    const secretFile = path.join(fs.mkdtempSync(path.join(os.tmpdir(), 'hearth-host-secret-')), 'secret.txt');
    scratch.push(path.dirname(secretFile));
    fs.writeFileSync(secretFile, SECRET);
    const bare = bareRepository((dir) => fs.symlinkSync(secretFile, path.join(dir, 'package.json')));
    const appId = await newApp('linked');
    const dep = await api<DeploymentView>('POST', `${apps()}/${appId}/deployments`, { repository: bare });
    expect(dep.status).toBe(202);
    const done = await settled(appId, dep.body.deploymentId);
    expect(done.state).toBe('failed');
    expect(done.reason).toMatch(/^build_failed: package\.json is not a regular file/);
    expect(JSON.stringify(done)).not.toContain(SECRET.slice(0, 10));
  });
});

describe('an app that turns its own files against Hearth', () => {
  it('a Procfile made a fifo before a crash: Hearth keeps answering, the app stays crashed and its log says why', async () => {
    const server = `
      const { execFileSync } = require('node:child_process');
      execFileSync('mkfifo', ['Procfile']);
      require('node:http').createServer((req, res) => {
        res.writeHead(200, { 'content-type': 'application/json' });
        res.end('{"ok":true}');
        if (req.url === '/crash') setTimeout(() => process.exit(9), 50);
      }).listen(Number(process.env.PORT), '127.0.0.1');`;
    const appId = await newApp('fifo');
    const dep = await api<DeploymentView>(
      'POST',
      `${apps()}/${appId}/deployments`,
      appArchive({ scripts: { start: 'node server.js' } }, { 'server.js': server }),
      'application/gzip',
    );
    expect((await settled(appId, dep.body.deploymentId)).state).toBe('live');
    expect((await fetch(`${hearth.baseUrl}/apps/${appId}/crash`, { signal: AbortSignal.timeout(10_000) })).status).toBe(
      200,
    );
    // The restart (1 s later) reads the Procfile again; the API answering while it happens is the point.
    await until(async () => {
      const logs = (
        await api<{ data: Array<{ stream: string; line: string }> }>('GET', `${apps()}/${appId}/logs?lines=50`)
      ).body.data;
      return logs.some(
        (l) => l.stream === 'hearth' && /cannot restart: build_failed: Procfile is not a regular file/.test(l.line),
      );
    }, 'the restart attempt to be logged');
    expect((await api<{ state: string }>('GET', `${apps()}/${appId}`)).body.state).toBe('crashed');
    expect((await fetch(`${hearth.baseUrl}/health`, { signal: AbortSignal.timeout(10_000) })).status).toBe(200);
  });
});

/** Host processes whose command line holds `marker` (sandboxed processes are visible from the host's pid namespace). */
function processesWith(marker: string): number[] {
  const pids: number[] = [];
  for (const pid of fs.readdirSync('/proc').filter((n) => /^\d+$/.test(n))) {
    try {
      if (fs.readFileSync(`/proc/${pid}/cmdline`, 'utf8').includes(marker)) pids.push(Number(pid));
    } catch {
      // gone meanwhile
    }
  }
  return pids;
}

describe('deleting an app while it builds', () => {
  it('stops the build: no process of it outlives the app', async () => {
    const marker = `hearth-build-marker-${process.pid}`;
    const appId = await newApp('endless-build');
    const dep = await api<DeploymentView>(
      'POST',
      `${apps()}/${appId}/deployments`,
      appArchive(
        { scripts: { build: `node build.js ${marker}`, start: 'node build.js' } },
        { 'build.js': 'setInterval(() => {}, 1000);' },
      ),
      'application/gzip',
    );
    expect(dep.status).toBe(202);
    await until(async () => processesWith(marker).length > 0, 'the build to run');
    expect((await api<{ deleted: boolean }>('DELETE', `${apps()}/${appId}`)).body.deleted).toBe(true);
    await until(async () => processesWith(marker).length === 0, 'the build to be stopped');
    expect(fs.existsSync(path.join(hearth.dataDir, 'apps', ws, appId))).toBe(false);
  });

  it('while its archive unpacks: the delete succeeds, the upload is a 404 (not a 500), nothing is left on disk', async () => {
    // Before the fix: a 500 (rm met files still being written: ENOTEMPTY, or the unpack met a removed directory:
    // ENOENT), a 202 for the deleted app, and thousands of files no API could reach.
    const appId = await newApp('unpacking');
    const files = Array.from({ length: 9_000 }, (_, i) => ({
      name: `d${i % 90}/f${i}`,
      typeFlag: '0',
      body: Buffer.from('x'),
    }));
    const archive = rawArchive([{ name: 'package.json', typeFlag: '0', body: Buffer.from('{}') }, ...files]);
    const appDir = path.join(hearth.dataDir, 'apps', ws, appId);
    const upload = api<ErrorBody>('POST', `${apps()}/${appId}/deployments`, archive, 'application/gzip');
    await until(async () => fs.existsSync(path.join(appDir, 'releases')), 'the unpack to start');
    const deleted = await api<{ deleted: boolean }>('DELETE', `${apps()}/${appId}`);
    expect(deleted.status).toBe(200);
    const uploaded = await upload;
    // Mid-unpack (this machine, every time: 9,000 files take about a second), the upload learns the app is gone. A
    // machine that unpacks them before the delete arrives answers 202 instead; the run is then stopped all the same.
    if (uploaded.status !== 202) {
      expect(uploaded.status).toBe(404);
      expect(uploaded.body.error.code).toBe('app_not_found');
    }
    expect(fs.existsSync(appDir)).toBe(false);
    expect((await api('GET', `${apps()}/${appId}`)).status).toBe(404);
  });
});
