import { execFileSync } from 'node:child_process';
import fs from 'node:fs';
import net from 'node:net';
import os from 'node:os';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { appArchive } from '../../helpers/app-archives.ts';
import { type HearthProcess, instantModelArgs, startHearthProcess } from '../../helpers/hearth-process.ts';
import { managementClient } from '../../helpers/management-client.ts';
import { tinyModel } from '../../helpers/test-model.ts';
import { namespaceWithServer, type TestNamespace } from '../../helpers/test-netns.ts';

/**
 * Apps and the network (contract "Apps and the network"), end to end: the real `hearth serve` behind its
 * HAProxy front, real bubblewrap sandboxes, a hostile app (test/fixtures/apps/net-probe.js) that tries, from
 * inside, to reach Hearth's internal port, another app's port, listeners the test opens on 127.0.0.1 and
 * 127.0.0.2 (stand-ins for a database), the Unix sockets it can name, and a "metadata service" on
 * 169.254.169.254 in a namespace the test makes. With `--app-network isolated` (the default) every attempt
 * fails, while Hearth's API (HEARTH_API_URL, the app's key) and an "outside" server (198.51.100.2, in a
 * namespace of the test's own) answer; with `--app-network host` the same attempts succeed, as before
 * isolation, and Hearth warns at boot. Root only (namespaces); nothing is sent to any address off this machine.
 */
const META_PORT = 8081;
const OUTSIDE_PORT = 8082;

interface Attempt {
  connected: boolean;
  code: string | null;
  data: string;
}

let isolated: Setup;
let shared: Setup;
let metadata: TestNamespace;
let outside: TestNamespace;
const listeners: net.Server[] = [];
let loopbackPorts: { one: number; two: number };
let socketDir: string;
const abstractName = `hearth-net-test-${process.pid}`;

interface Setup {
  hearth: HearthProcess;
  app: string;
  other: string;
}

const ARCHIVE = appArchive(
  { name: 'net-probe', scripts: { start: 'node server.js' } },
  { 'server.js': fs.readFileSync(path.resolve(import.meta.dirname, '../../fixtures/apps/net-probe.js')) },
);

async function setup(args: string[]): Promise<Setup> {
  const hearth = await startHearthProcess({
    args: [...instantModelArgs(await tinyModel(), { front: 'haproxy', 'app-start-timeout': 20 }), ...args],
  });
  await hearth.waitReady();
  const { api, deployLive, readyWorkspace } = managementClient(() => hearth, 60_000);
  const ws = await readyWorkspace('net');
  const deployed = async (name: string) => {
    const appId = (
      await api<{ appId: string }>('POST', `/api/v1/workspaces/${ws}/apps`, { name, apiKeyEnv: 'HEARTH_API_KEY' })
    ).body.appId;
    await deployLive(ws, appId, ARCHIVE, name);
    return appId;
  };
  const [app, other] = await Promise.all([deployed('hostile'), deployed('neighbour')]);
  return { hearth, app, other };
}

function listen(server: net.Server, ...args: unknown[]): Promise<void> {
  return new Promise((resolve, reject) => {
    server.once('error', reject);
    (server.listen as (...a: unknown[]) => void)(...args, () => resolve());
  });
}

/** A listener the app must not reach: answers a secret. */
async function secretListener(...args: unknown[]): Promise<net.Server> {
  const server = net.createServer((s) => s.end('secret'));
  await listen(server, ...args);
  listeners.push(server);
  return server;
}

/** The TCP ports Hearth's own process listens on: its internal uWS port behind the HAProxy front. */
function hearthInternalPorts(h: HearthProcess): number[] {
  const out = execFileSync('ss', ['-ltnpH'], { encoding: 'utf8' });
  const ports = out
    .split('\n')
    .filter((l) => l.includes(`pid=${h.proc.pid},`))
    .map((l) => Number(/:(\d+)\s/.exec(l.split(/\s+/)[3] + ' ')?.[1]));
  return [...new Set(ports)].filter((p) => p > 0 && p !== h.port);
}

async function ask<T>(s: Setup, p: string, app = s.app): Promise<T> {
  const r = await fetch(`${s.hearth.baseUrl}/apps/${app}${p}`, { signal: AbortSignal.timeout(30_000) });
  expect(r.status, await r.clone().text()).toBe(200);
  return (await r.json()) as T;
}

const tcp = (s: Setup, host: string, port: number) =>
  ask<Attempt>(s, `/tcp?host=${encodeURIComponent(host)}&port=${port}`);

beforeAll(async () => {
  metadata = await namespaceWithServer('169.254.169.1', '169.254.169.254', META_PORT, 'metadata-credentials');
  outside = await namespaceWithServer('198.51.100.1', '198.51.100.2', OUTSIDE_PORT, 'outside-ok');
  const one = await secretListener(0, '127.0.0.1');
  const port = (one.address() as net.AddressInfo).port;
  await secretListener(port, '127.0.0.2'); // the same port on another loopback address: a "database" bound to 127.0.0.2
  loopbackPorts = { one: port, two: port };
  socketDir = fs.mkdtempSync(path.join(os.tmpdir(), 'hearth-net-sock-'));
  await secretListener(path.join(socketDir, 'db.sock'));
  await secretListener(`\0${abstractName}`);
  [isolated, shared] = await Promise.all([setup([]), setup(['--app-network', 'host'])]);
}, 240_000);

afterAll(async () => {
  await Promise.all([isolated?.hearth.stop(), shared?.hearth.stop()]);
  for (const s of listeners) s.close();
  await metadata?.remove();
  await outside?.remove();
  if (socketDir) fs.rmSync(socketDir, { recursive: true, force: true });
  for (const s of [isolated, shared]) if (s) fs.rmSync(s.hearth.dataDir, { recursive: true, force: true });
});

describe('the controls: every target answers from the host', () => {
  it('the secret listeners, the metadata server and the outside server all answer this test', async () => {
    for (const [host, port] of [
      ['127.0.0.1', loopbackPorts.one],
      ['127.0.0.2', loopbackPorts.two],
      ['169.254.169.254', META_PORT],
      ['198.51.100.2', OUTSIDE_PORT],
    ] as const) {
      const got = await new Promise<string>((resolve, reject) => {
        let data = '';
        net
          .connect(port, host)
          .on('data', (d) => {
            data += d;
          })
          .on('end', () => resolve(data))
          .on('error', reject);
      });
      expect(got, `${host}:${port}`).toMatch(/secret|metadata-credentials|outside-ok/);
    }
    expect(hearthInternalPorts(isolated.hearth).length).toBeGreaterThan(0);
  });
});

describe('--app-network isolated (the default): nothing of the host', () => {
  it("cannot connect to Hearth's internal port, behind the front", async () => {
    for (const port of hearthInternalPorts(isolated.hearth))
      expect(await tcp(isolated, '127.0.0.1', port)).toMatchObject({ connected: false });
  });

  it("cannot connect to another app's port", async () => {
    const { port } = await ask<{ port: number }>(isolated, '/port', isolated.other);
    expect((await fetch(`http://127.0.0.1:${port}/health`)).status).toBe(200); // Hearth (and this test) reach it on the host
    expect(await tcp(isolated, '127.0.0.1', port)).toMatchObject({ connected: false });
  });

  it('cannot connect to listeners on 127.0.0.1 and 127.0.0.2', async () => {
    expect(await tcp(isolated, '127.0.0.1', loopbackPorts.one)).toMatchObject({ connected: false, data: '' });
    expect(await tcp(isolated, '127.0.0.2', loopbackPorts.two)).toMatchObject({ connected: false, data: '' });
  });

  it("cannot connect to the host's own addresses", async () => {
    for (const list of Object.values(os.networkInterfaces())) {
      for (const a of list ?? []) {
        if (a.internal || a.family !== 'IPv4') continue;
        expect(await tcp(isolated, a.address, loopbackPorts.one), a.address).toMatchObject({ connected: false });
      }
    }
  });

  it("cannot connect to the Unix sockets it can name, the host's abstract ones included", async () => {
    expect(
      await ask<Attempt>(isolated, `/unix?path=${encodeURIComponent(path.join(socketDir, 'db.sock'))}`),
    ).toMatchObject({ connected: false });
    expect(await ask<Attempt>(isolated, `/unix?path=${encodeURIComponent(`@${abstractName}`)}`)).toMatchObject({
      connected: false,
    });
    const all = await ask<Record<string, Attempt>>(isolated, '/unix-all');
    expect(Object.keys(all)).not.toContain(`@${abstractName}`);
    for (const [name, a] of Object.entries(all)) expect(a.data, name).toBe('');
  });

  it('cannot reach a metadata address (169.254.0.0/16)', async () => {
    expect(await tcp(isolated, '169.254.169.254', META_PORT)).toMatchObject({ connected: false, data: '' });
  });

  it("reaches Hearth's API at HEARTH_API_URL with its key, and the outside world", async () => {
    const { apiUrl } = await ask<{ apiUrl: string }>(isolated, '/port');
    expect(apiUrl).toBe(isolated.hearth.baseUrl);
    const api = await ask<{ status: number; body: string }>(isolated, '/api');
    expect(api.status, api.body).toBe(200);
    expect(JSON.parse(api.body)).toMatchObject({ object: 'list' });
    expect(await tcp(isolated, '198.51.100.2', OUTSIDE_PORT)).toMatchObject({ connected: true, data: 'outside-ok' });
  });

  it('leaves no network namespace behind when Hearth stops', async () => {
    const mine = () =>
      (fs.existsSync('/run/netns') ? fs.readdirSync('/run/netns') : []).filter((n) =>
        n.startsWith(`hearth-${isolated.hearth.proc.pid}-`),
      );
    expect(mine().length).toBeGreaterThanOrEqual(2); // one per running app
    await isolated.hearth.stop();
    expect(mine()).toEqual([]);
  });
});

describe('--app-network host: as before, with a warning', () => {
  it('warns at boot', () => {
    expect(shared.hearth.logs()).toMatch(/apps share the host's network \(--app-network host\)/);
    expect(isolated.hearth.logs()).not.toMatch(/--app-network host/);
  });

  it("reaches what an isolated app cannot: Hearth's internal port, another app, loopback listeners, abstract sockets, metadata", async () => {
    const internal = hearthInternalPorts(shared.hearth);
    expect(internal.length).toBeGreaterThan(0);
    expect(await tcp(shared, '127.0.0.1', internal[0]!)).toMatchObject({ connected: true });
    const { port } = await ask<{ port: number }>(shared, '/port', shared.other);
    expect(await tcp(shared, '127.0.0.1', port)).toMatchObject({ connected: true });
    expect(await tcp(shared, '127.0.0.1', loopbackPorts.one)).toMatchObject({ connected: true, data: 'secret' });
    expect(await tcp(shared, '127.0.0.2', loopbackPorts.two)).toMatchObject({ connected: true, data: 'secret' });
    expect(await ask<Attempt>(shared, `/unix?path=${encodeURIComponent(`@${abstractName}`)}`)).toMatchObject({
      connected: true,
      data: 'secret',
    });
    expect(await tcp(shared, '169.254.169.254', META_PORT)).toMatchObject({
      connected: true,
      data: 'metadata-credentials',
    });
    const api = await ask<{ status: number }>(shared, '/api');
    expect(api.status).toBe(200);
  });
});

describe('a host that cannot isolate', () => {
  it('fails PUT /yam with a reason naming the missing tool, never sharing the network silently', async () => {
    const other = await startHearthProcess({
      args: ['--model', await tinyModel(), '--engine', 'instant', '--app-pasta', '/nonexistent/pasta'],
    });
    try {
      const { api, until } = managementClient(() => other, 30_000);
      const ws = (await api<{ workspaceId: string }>('POST', '/api/v1/workspaces', { name: 'x' })).body.workspaceId;
      await api('PUT', `/api/v1/workspaces/${ws}/yam`);
      let yam = { state: 'creating', error: null as string | null };
      await until(
        async () => (yam = (await api<typeof yam>('GET', `/api/v1/workspaces/${ws}/yam`)).body).state !== 'creating',
        'the Yam to settle',
      );
      expect(yam.state).toBe('failed');
      expect(yam.error).toMatch(
        /pasta \('\/nonexistent\/pasta'\): install the Debian package passt, or start Hearth with --app-network host/,
      );
      expect((await api('POST', `/api/v1/workspaces/${ws}/apps`, { name: 'x' })).status).toBe(409);
    } finally {
      await other.stop();
      fs.rmSync(other.dataDir, { recursive: true, force: true });
    }
  }, 60_000);
});
