import { spawn, type ChildProcess } from 'node:child_process';
import fs from 'node:fs';
import path from 'node:path';
import { type HearthProcess, startHearthProcess } from '../../test/helpers/hearth-process.ts';

export type { HearthProcess };

/**
 * Starts `hearth serve` for a benchmark (the tests' launcher: child process, free port, fresh data dir,
 * one API key) at log level info, waits until the model is ready. Stop it with `.stop()`. `bin`: another
 * checkout's bin/hearth.js (a baseline).
 */
export async function startBenchHearth(
  args: string[],
  env: NodeJS.ProcessEnv = {},
  bin?: string,
): Promise<HearthProcess> {
  const hearth = await startHearthProcess({
    args,
    env: { HEARTH_LOG_LEVEL: 'info', ...env },
    ...(bin === undefined ? {} : { bin }),
  });
  try {
    await hearth.waitReady(120_000);
  } catch (err) {
    await hearth.stop();
    throw err;
  }
  return hearth;
}

/** The fields of a Hearth's "model ready" log line (engine, threads, calibration ...); {} when it has none. */
export function modelReadyFields(hearth: HearthProcess): Record<string, unknown> {
  const line = hearth
    .logs()
    .split('\n')
    .find((l) => l.includes('"msg":"model ready"'));
  try {
    return line ? (JSON.parse(line) as Record<string, unknown>) : {};
  } catch {
    return {}; // not JSON
  }
}

/** Resident set size of a process from /proc/<pid>/status (VmRSS), in bytes; NaN where unavailable. */
export function rssBytes(pid: number): number {
  try {
    const m = /^VmRSS:\s+(\d+)\s+kB$/m.exec(fs.readFileSync(`/proc/${pid}/status`, 'utf8'));
    return m ? Number(m[1]) * 1024 : Number.NaN;
  } catch {
    return Number.NaN;
  }
}

export interface BareServer {
  url: string;
  proc: ChildProcess;
  stop(): Promise<void>;
}

/**
 * The comparison server of bench:gateway: a bare uWebSockets.js app in its own process answering every
 * GET with `body` as application/json (bench/lib/bare-uws-server.ts), no auth, no routing, no metrics.
 */
export async function startBareUws(body: string): Promise<BareServer> {
  const script = path.join(import.meta.dirname, 'bare-uws-server.ts');
  const proc = spawn(process.execPath, ['--import', 'tsx', script], {
    env: { ...process.env, BARE_BODY: body },
    stdio: ['ignore', 'pipe', 'inherit'],
  });
  const exited = new Promise<void>((resolve) => proc.on('exit', () => resolve()));
  const port = await new Promise<number>((resolve, reject) => {
    let out = '';
    const timer = setTimeout(() => reject(new Error(`bare uWS server did not start: ${out}`)), 20_000);
    proc.stdout!.on('data', (d: Buffer) => {
      out += d.toString();
      const m = /listening (\d+)/.exec(out);
      if (m) {
        clearTimeout(timer);
        resolve(Number(m[1]));
      }
    });
    void exited.then(() => reject(new Error(`bare uWS server exited: ${out}`)));
  });
  return {
    url: `http://127.0.0.1:${port}`,
    proc,
    async stop() {
      if (proc.exitCode === null && proc.signalCode === null) proc.kill('SIGTERM');
      await exited;
    },
  };
}
