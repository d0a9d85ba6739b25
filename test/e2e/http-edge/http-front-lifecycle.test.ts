import fs from 'node:fs';
import net from 'node:net';
import { afterEach, describe, expect, it } from 'vitest';
import { HAPROXY } from '../../helpers/fleet-haproxy.ts';
import { type HearthProcess, hearthCli, startHearthProcess } from '../../helpers/hearth-process.ts';
import { until } from '../../helpers/management-client.ts';
import { portFree } from '../../helpers/ports.ts';
import { tinyModel } from '../../helpers/test-model.ts';
import { processAlive } from '../../../src/lifecycle/process-alive.ts';

/**
 * The managed HTTP front's life (src/front/haproxy-front.ts): it starts with `hearth serve`, is started again if it
 * dies, stops with Hearth (signal or crash), and `--front off` / a taken port behave as documented.
 */
// A real GGUF (serve refuses a --model that is not one at start); the instant engine answers without computing.
const ARGS = ['--engine', 'instant', '--model', await tinyModel(), '--model-id', 'local/instant'];

/** Processes whose parent is `pid` (Linux /proc). */
function childrenOf(pid: number): Array<{ pid: number; name: string }> {
  const out: Array<{ pid: number; name: string }> = [];
  for (const entry of fs.readdirSync('/proc')) {
    if (!/^\d+$/.test(entry)) continue;
    try {
      const stat = fs.readFileSync(`/proc/${entry}/stat`, 'utf8');
      const close = stat.lastIndexOf(')');
      const ppid = Number(stat.slice(close + 2).split(' ')[1]);
      if (ppid === pid) out.push({ pid: Number(entry), name: stat.slice(stat.indexOf('(') + 1, close) });
    } catch {
      // the process ended while we looked
    }
  }
  return out;
}

function haproxyOf(h: HearthProcess): number | undefined {
  return childrenOf(h.proc.pid!).find((c) => c.name === 'haproxy')?.pid;
}

async function healthAnswered(h: HearthProcess): Promise<boolean> {
  const r = await fetch(`${h.baseUrl}/health`).catch(() => null);
  return r !== null && r.headers.get('x-request-id') !== null;
}

describe.skipIf(HAPROXY === undefined)('the managed HTTP front (hearth serve --front auto)', () => {
  let hearth: HearthProcess | undefined;
  afterEach(async () => {
    await hearth?.stop();
    hearth = undefined;
  });

  it('is started again when it dies, on the same port', async () => {
    hearth = await startHearthProcess({ args: ARGS });
    const first = haproxyOf(hearth);
    expect(first).toBeDefined();
    process.kill(first!, 'SIGKILL');
    await until(async () => {
      const next = haproxyOf(hearth!);
      return next !== undefined && next !== first && (await healthAnswered(hearth!));
    }, 'a new haproxy answers');
    expect(hearth.logs()).toContain('HTTP front (haproxy) exited; starting it again');
  });

  it('stops with Hearth on SIGTERM: exit 0, no haproxy left, the port free', async () => {
    hearth = await startHearthProcess({ args: ARGS });
    const front = haproxyOf(hearth)!;
    expect(await hearth.stop()).toBe(0);
    expect(processAlive(front)).toBe(false);
    expect(await portFree(hearth.port)).toBe(true);
  });

  it('dies with Hearth when Hearth is killed (no orphan holding the port)', async () => {
    hearth = await startHearthProcess({ args: ARGS });
    const front = haproxyOf(hearth)!;
    const exited = new Promise((r) => hearth!.proc.once('exit', r));
    hearth.proc.kill('SIGKILL');
    await exited;
    await until(() => !processAlive(front), 'haproxy is gone');
    await until(() => portFree(hearth!.port), 'the port is free');
  });

  it('a taken port fails the start (exit 1, the reason logged), as without the front', async () => {
    const blocker = net.createServer();
    await new Promise<void>((r) => blocker.listen(0, '127.0.0.1', () => r()));
    const port = (blocker.address() as net.AddressInfo).port;
    try {
      const r = hearthCli([
        'serve',
        '--host',
        '127.0.0.1',
        '--port',
        String(port),
        '--data-dir',
        fs.mkdtempSync('/tmp/hearth-front-'),
        ...ARGS,
      ]);
      expect(r.status).toBe(1);
      expect(r.stderr).toContain(`cannot listen on 127.0.0.1:${port}`);
    } finally {
      blocker.close();
    }
  });

  it('--front off: uWS alone on the public port, no haproxy', async () => {
    hearth = await startHearthProcess({ args: [...ARGS, '--front', 'off'] });
    expect(hearth.logs()).toMatch(/"msg":"listening".*"front":"none"/);
    expect(haproxyOf(hearth)).toBeUndefined();
    expect(await healthAnswered(hearth)).toBe(true);
  });
});
