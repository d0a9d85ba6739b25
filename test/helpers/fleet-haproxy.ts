import { type ChildProcess, spawn } from 'node:child_process';
import path from 'node:path';
import { collectOutput } from './child-output.ts';
import { hostToolRuns } from './host-tools.ts';
import { freePort } from './ports.ts';

/**
 * HAProxy on the shipped fleet configuration (deploy/haproxy/fleet.cfg) on a loopback port, for the fleet tests.
 * `replicas` fills the HEARTH_REPLICA_<slot> variables (slot 1..8 -> host:port); `appHost` is HEARTH_FLEET_APP_HOST.
 */
export const FLEET_CONFIG = path.resolve(import.meta.dirname, '../../deploy/haproxy/fleet.cfg');

/** The haproxy binary (Debian puts it in /usr/sbin, which a non-root PATH may lack), or undefined. */
export const HAPROXY = ['haproxy', '/usr/sbin/haproxy'].find((bin) => hostToolRuns(bin, ['-v']));

export interface FleetFront {
  baseUrl: string;
  proc: ChildProcess;
  logs(): string;
  stop(): Promise<void>;
}

export async function startFleetFront(o: { replicas: Record<number, string>; appHost?: string }): Promise<FleetFront> {
  if (HAPROXY === undefined) throw new Error('haproxy is not installed');
  const port = await freePort();
  const env: NodeJS.ProcessEnv = { ...process.env, HEARTH_FLEET_BIND: `127.0.0.1:${port}` };
  for (const [slot, address] of Object.entries(o.replicas)) env[`HEARTH_REPLICA_${slot}`] = address;
  if (o.appHost !== undefined) env.HEARTH_FLEET_APP_HOST = o.appHost;
  const proc = spawn(HAPROXY, ['-db', '-f', FLEET_CONFIG], { env, stdio: ['ignore', 'pipe', 'pipe'] });
  const logs = collectOutput(proc);
  const exited = new Promise<void>((resolve) => proc.on('exit', () => resolve()));
  const baseUrl = `http://127.0.0.1:${port}`;
  for (let i = 0; ; i++) {
    if (proc.exitCode !== null) throw new Error(`haproxy exited with ${proc.exitCode}:\n${logs()}`);
    const r = await fetch(`${baseUrl}/health`).catch(() => null);
    if (r !== null) {
      await r.arrayBuffer();
      break;
    }
    if (i > 200) {
      proc.kill('SIGKILL');
      throw new Error(`haproxy did not listen:\n${logs()}`);
    }
    await new Promise((res) => setTimeout(res, 50));
  }
  return {
    baseUrl,
    proc,
    logs,
    async stop() {
      if (proc.exitCode === null && proc.signalCode === null) proc.kill('SIGTERM');
      await exited;
    },
  };
}

/** Polls `probe` every 100 ms until it returns true (or throws after timeoutMs). */
export async function until(probe: () => Promise<boolean>, what: string, timeoutMs = 15_000): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  while (Date.now() < deadline) {
    if (await probe()) return;
    await new Promise((res) => setTimeout(res, 100));
  }
  throw new Error(`timed out waiting for ${what}`);
}
