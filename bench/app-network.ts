/**
 * What an app's own network namespace costs (contract "Apps and the network"), measured in one run:
 *
 * A. Through Hearth's proxy, `--app-network host` (before) against `--app-network isolated` (after): two
 *    Hearths side by side, each with the same app, rounds interleaved. "set-up": a request whose answer
 *    carries `Connection: close`, so each one needs a fresh client connection and a fresh proxy -> app
 *    connection (the cost isolation adds is there); "SSE": one stream of 1 KiB events, MiB/s at the client.
 * B. The mechanisms alone (no Hearth), to choose between them: the same server on the host's loopback, in a
 *    namespace behind pasta (`-t`, how Hearth does it), and in a namespace behind a veth pair (the server
 *    reached at the namespace's address; veth needs forwarding/NAT on the host for the outside world, not
 *    set up here). Memory: pasta's RSS per namespace.
 *
 * Root only (namespaces). `npx tsx bench/app-network.ts [rounds]`; medians of the rounds; ratios to host.
 */
import { type ChildProcess, execFileSync, spawn } from 'node:child_process';
import fs from 'node:fs';
import http from 'node:http';
import os from 'node:os';
import { rawArchive } from '../test/helpers/app-archives.ts';
import { managementClient } from '../test/helpers/management-client.ts';
import { tinyModel } from '../test/helpers/test-model.ts';
import { type HearthProcess, rssBytes, startBenchHearth } from './lib/servers.ts';

const ROUNDS = Number(process.argv[2] ?? 5);
const SETUPS_PER_ROUND = 200;
const SSE_BYTES = 64 << 20;
const EVENT = `data: ${'x'.repeat(1016)}\n\n`; // 1 KiB per event

const APP = `
const http = require('node:http');
const EVENT = ${JSON.stringify(EVENT)};
http.createServer((req, res) => {
  const url = new URL(req.url, 'http://app');
  if (url.pathname === '/health') { res.writeHead(200, { 'content-type': 'application/json' }); return res.end('{"ok":true}'); }
  if (url.pathname === '/fresh') { res.writeHead(200, { 'content-type': 'text/plain', connection: 'close' }); return res.end('ok'); }
  if (url.pathname === '/sse') {
    res.writeHead(200, { 'content-type': 'text/event-stream' });
    let left = Number(url.searchParams.get('bytes'));
    const pump = () => {
      while (left > 0) { left -= EVENT.length; if (!res.write(EVENT)) return res.once('drain', pump); }
      res.end();
    };
    return pump();
  }
  res.writeHead(404); res.end();
}).listen(Number(process.env.PORT), process.env.BIND || '127.0.0.1');
`;

const median = (xs: number[]) => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)]!;

/** Mean ms of `n` sequential requests to `url`, each on a fresh connection. */
async function setupMs(url: string, n: number): Promise<number> {
  const t0 = performance.now();
  for (let i = 0; i < n; i++) {
    await new Promise<void>((resolve, reject) => {
      http
        .get(url, { agent: false }, (res) => {
          if (res.statusCode !== 200) reject(new Error(`${url}: ${res.statusCode}`));
          res.resume();
          res.on('end', resolve);
        })
        .on('error', reject);
    });
  }
  return (performance.now() - t0) / n;
}

/** MiB/s of one SSE stream of `bytes`. */
async function sseMiBps(url: string, bytes: number): Promise<number> {
  const t0 = performance.now();
  let got = 0;
  await new Promise<void>((resolve, reject) => {
    http
      .get(`${url}?bytes=${bytes}`, { agent: false }, (res) => {
        res.on('data', (d: Buffer) => {
          got += d.length;
        });
        res.on('end', resolve);
      })
      .on('error', reject);
  });
  if (got < bytes) throw new Error(`${url}: ${got} of ${bytes} bytes`);
  return got / (1 << 20) / ((performance.now() - t0) / 1000);
}

// A. Through the proxy --------------------------------------------------------------------------------

async function hearthWithApp(network: 'host' | 'isolated'): Promise<{ hearth: HearthProcess; url: string }> {
  const hearth = await startBenchHearth([
    '--model',
    await tinyModel(),
    '--engine',
    'instant',
    '--app-network',
    network,
  ]);
  await hearth.waitReady();
  const { api, until } = managementClient(() => hearth, 60_000);
  const ws = (await api<{ workspaceId: string }>('POST', '/api/v1/workspaces', { name: 'bench' })).body.workspaceId;
  await api('PUT', `/api/v1/workspaces/${ws}/yam`);
  await until(
    async () => (await api<{ state: string }>('GET', `/api/v1/workspaces/${ws}/yam`)).body.state === 'ready',
    'the Yam',
  );
  const appId = (await api<{ appId: string }>('POST', `/api/v1/workspaces/${ws}/apps`, { name: 'bench' })).body.appId;
  const archive = rawArchive([
    {
      name: 'package.json',
      typeFlag: '0',
      body: Buffer.from(JSON.stringify({ name: 'bench', scripts: { start: 'node server.js' } })),
    },
    { name: 'server.js', typeFlag: '0', body: Buffer.from(APP) },
  ]);
  const dep = await api<{ deploymentId: string }>(
    'POST',
    `/api/v1/workspaces/${ws}/apps/${appId}/deployments`,
    archive,
    'application/gzip',
  );
  await until(
    async () =>
      (
        await api<{ state: string }>(
          'GET',
          `/api/v1/workspaces/${ws}/apps/${appId}/deployments/${dep.body.deploymentId}`,
        )
      ).body.state === 'live',
    'the app',
  );
  return { hearth, url: `${hearth.baseUrl}/apps/${appId}` };
}

/** RSS of the pasta processes serving the namespaces whose path starts with `netnsPrefix`. */
function pastaRss(netnsPrefix: string): number[] {
  const out: number[] = [];
  for (const pid of fs.readdirSync('/proc').filter((p) => /^\d+$/.test(p))) {
    try {
      const cmd = fs.readFileSync(`/proc/${pid}/cmdline`, 'utf8');
      if (cmd.includes('--netns') && cmd.includes(netnsPrefix)) out.push(rssBytes(Number(pid)));
    } catch {
      // gone
    }
  }
  return out;
}

// B. The mechanisms alone -----------------------------------------------------------------------------

const ip = (...args: string[]) => execFileSync('/usr/sbin/ip', args, { stdio: 'pipe' });

function startServer(port: number, bind: string, netns?: string): Promise<ChildProcess> {
  const argv = netns
    ? ['/usr/sbin/ip', 'netns', 'exec', netns, process.execPath, '-e', APP]
    : [process.execPath, '-e', APP];
  const proc = spawn(argv[0]!, argv.slice(1), {
    env: { ...process.env, PORT: String(port), BIND: bind },
    stdio: 'ignore',
  });
  return new Promise((resolve, reject) => {
    const deadline = Date.now() + 10_000;
    const poll = () => {
      const host = bind === '0.0.0.0' ? null : bind;
      http
        .get(`http://${host ?? '127.0.0.1'}:${port}/health`, (res) => {
          res.resume();
          resolve(proc);
        })
        .on('error', () => {
          if (Date.now() > deadline) reject(new Error(`server on ${bind}:${port} did not start`));
          else setTimeout(poll, 50);
        });
    };
    if (!netns || bind !== '0.0.0.0') poll();
    else resolve(proc);
  });
}

async function mechanisms(): Promise<Record<string, string>> {
  const tag = `hbench-${process.pid}`;
  const procs: ChildProcess[] = [];
  const cleanup = () => {
    for (const p of procs) p.kill('SIGKILL');
    for (const n of [`${tag}-p`, `${tag}-v`])
      try {
        ip('netns', 'delete', n);
      } catch {
        /* not made */
      }
  };
  try {
    procs.push(await startServer(41001, '127.0.0.1'));
    ip('netns', 'add', `${tag}-p`);
    execFileSync(
      'pasta',
      [
        '--quiet',
        '--config-net',
        '--no-map-gw',
        '--runas',
        '0',
        '-t',
        '127.0.0.1/41002',
        '-T',
        'none',
        '-u',
        'none',
        '-U',
        'none',
        '--netns',
        `/run/netns/${tag}-p`,
      ],
      { stdio: 'pipe' },
    );
    procs.push(await startServer(41002, '127.0.0.1', `${tag}-p`));
    ip('netns', 'add', `${tag}-v`);
    ip('link', 'add', `hbv${process.pid % 100000}`, 'type', 'veth', 'peer', 'name', 'eth0', 'netns', `${tag}-v`);
    ip('addr', 'add', '10.231.77.1/30', 'dev', `hbv${process.pid % 100000}`);
    ip('link', 'set', `hbv${process.pid % 100000}`, 'up');
    ip('-n', `${tag}-v`, 'addr', 'add', '10.231.77.2/30', 'dev', 'eth0');
    ip('-n', `${tag}-v`, 'link', 'set', 'eth0', 'up');
    ip('-n', `${tag}-v`, 'link', 'set', 'lo', 'up');
    procs.push(await startServer(41003, '10.231.77.2', `${tag}-v`));
    const targets = {
      host: 'http://127.0.0.1:41001',
      pasta: 'http://127.0.0.1:41002',
      veth: 'http://10.231.77.2:41003',
    };
    const setup: Record<string, number[]> = { host: [], pasta: [], veth: [] };
    const sse: Record<string, number[]> = { host: [], pasta: [], veth: [] };
    for (let r = 0; r < ROUNDS; r++) {
      for (const [k, url] of Object.entries(targets)) {
        setup[k]!.push(await setupMs(`${url}/fresh`, SETUPS_PER_ROUND));
        sse[k]!.push(await sseMiBps(`${url}/sse`, SSE_BYTES));
      }
    }
    const out: Record<string, string> = {};
    for (const k of Object.keys(targets)) {
      out[k] =
        `set-up ${median(setup[k]!).toFixed(3)} ms (x${(median(setup[k]!) / median(setup.host!)).toFixed(2)}), SSE ${median(sse[k]!).toFixed(0)} MiB/s (x${(median(sse[k]!) / median(sse.host!)).toFixed(2)})`;
    }
    out['pasta RSS'] = `${pastaRss(`/run/netns/${tag}-p`)
      .map((b) => (b / (1 << 20)).toFixed(1))
      .join(', ')} MiB per namespace`;
    return out;
  } finally {
    cleanup();
  }
}

async function main(): Promise<void> {
  console.log(
    `app-network bench · ${os.cpus()[0]?.model} · ${os.cpus().length} cores · load ${os.loadavg()[0]!.toFixed(2)} · ${ROUNDS} rounds`,
  );
  console.log('B. mechanisms alone (fresh connection + tiny request; one 64 MiB SSE stream):');
  for (const [k, v] of Object.entries(await mechanisms())) console.log(`  ${k.padEnd(9)} ${v}`);

  const [before, after] = await Promise.all([hearthWithApp('host'), hearthWithApp('isolated')]);
  try {
    const setup = { host: [] as number[], isolated: [] as number[] };
    const sse = { host: [] as number[], isolated: [] as number[] };
    for (let r = 0; r < ROUNDS; r++) {
      for (const [k, s] of [
        ['host', before],
        ['isolated', after],
      ] as const) {
        setup[k].push(await setupMs(`${s.url}/fresh`, SETUPS_PER_ROUND));
        sse[k].push(await sseMiBps(`${s.url}/sse`, SSE_BYTES));
      }
    }
    console.log("A. through Hearth's proxy (fresh client and app connections per request; one 64 MiB SSE stream):");
    for (const k of ['host', 'isolated'] as const) {
      console.log(
        `  ${k.padEnd(9)} set-up ${median(setup[k]).toFixed(3)} ms (x${(median(setup[k]) / median(setup.host)).toFixed(2)}), SSE ${median(sse[k]).toFixed(0)} MiB/s (x${(median(sse[k]) / median(sse.host)).toFixed(2)})`,
      );
    }
    console.log(
      `  pasta RSS per isolated app: ${pastaRss(`/run/netns/hearth-${after.hearth.proc.pid}-`)
        .map((b) => `${(b / (1 << 20)).toFixed(1)} MiB`)
        .join(', ')}`,
    );
  } finally {
    await Promise.all([before.hearth.stop(), after.hearth.stop()]);
    for (const s of [before, after]) fs.rmSync(s.hearth.dataDir, { recursive: true, force: true });
  }
}

await main();
