import { spawn, spawnSync, type ChildProcess } from 'node:child_process';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import pg from 'pg';
import { afterAll, beforeAll } from 'vitest';
import { freePort } from './ports.ts';

/**
 * A real PostgreSQL server for a test file: initdb in a temporary directory, started on a free loopback port
 * with trust authentication, removed at the end. PostgreSQL refuses to run as root, so as root (CI, this
 * machine) it runs as the `postgres` user through runuser. The binaries are found on PATH or under
 * /usr/lib/postgresql/<version>/bin (Debian's `postgresql` package, installed by .ci/apt-packages).
 * fsync is off: the tests kill processes, never the machine.
 */
export interface PostgresServer {
  /** The server's port on 127.0.0.1. */
  readonly port: number;
  /** A new empty database on this server; returns its URL. */
  createDatabase(): Promise<string>;
  /** Stops the server (fast shutdown), keeping its data; `start()` brings it back on the same port. */
  stop(): Promise<void>;
  start(): Promise<void>;
  /**
   * Freezes (SIGSTOP) or thaws (SIGCONT) the server and every backend of it: a database that accepts
   * connections but never answers, as behind a dead network path.
   */
  freeze(): void;
  thaw(): void;
  /** Stops it for good and removes its directory. */
  destroy(): Promise<void>;
}

const USER = 'hearth';

/** The directory of initdb/postgres, or undefined when PostgreSQL is not installed. */
export function postgresBinDir(): string | undefined {
  const onPath = spawnSync('sh', ['-c', 'command -v initdb'], { encoding: 'utf8' }).stdout.trim();
  if (onPath && fs.existsSync(path.join(path.dirname(onPath), 'postgres'))) return path.dirname(onPath);
  const root = '/usr/lib/postgresql';
  if (!fs.existsSync(root)) return undefined;
  const versions = fs
    .readdirSync(root)
    .filter((v) => fs.existsSync(path.join(root, v, 'bin', 'initdb')))
    .sort((a, b) => Number(b) - Number(a));
  return versions[0] === undefined ? undefined : path.join(root, versions[0], 'bin');
}

const asRoot = process.getuid?.() === 0;
/** argv run as the unprivileged postgres user when this process is root. */
const asPostgres = (argv: string[]): string[] => (asRoot ? ['runuser', '-u', 'postgres', '--', ...argv] : argv);

export async function startPostgres(): Promise<PostgresServer> {
  const bin = postgresBinDir();
  if (!bin)
    throw new Error(
      'PostgreSQL is not installed (initdb not found on PATH or under /usr/lib/postgresql): run .ci/apt-packages',
    );
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'hearth-pg-'));
  const data = path.join(dir, 'data');
  fs.mkdirSync(data, { mode: 0o700 });
  if (asRoot) spawnSync('chown', ['-R', 'postgres:postgres', dir]);
  const initdbFlags = ['-D', data, '-U', USER, '-A', 'trust', '--no-sync', '-E', 'UTF8', '--locale', 'C'];
  const [cmd, ...args] = asPostgres([path.join(bin, 'initdb'), ...initdbFlags]);
  const init = spawnSync(cmd!, args, { encoding: 'utf8' });
  if (init.status !== 0) throw new Error(`initdb failed: ${init.stderr || init.stdout}`);
  const port = await freePort();
  let child: ChildProcess | null = null;
  let log = '';

  const start = async () => {
    const settings = ['listen_addresses=127.0.0.1', 'fsync=off', 'max_connections=200'].flatMap((s) => ['-c', s]);
    const [c, ...a] = asPostgres([path.join(bin, 'postgres'), '-D', data, '-k', dir, '-p', String(port), ...settings]);
    const proc = spawn(c!, a, { stdio: ['ignore', 'pipe', 'pipe'] });
    child = proc;
    proc.stdout.on('data', (d: Buffer) => (log += d.toString()));
    proc.stderr.on('data', (d: Buffer) => (log += d.toString()));
    const deadline = Date.now() + 30_000;
    for (;;) {
      if (proc.exitCode !== null) throw new Error(`postgres exited (${proc.exitCode}): ${log.slice(-2000)}`);
      const client = new pg.Client({ host: '127.0.0.1', port, user: USER, database: 'postgres' });
      try {
        await client.connect();
        await client.end();
        return;
      } catch {
        await client.end().catch(() => {});
        if (Date.now() > deadline) throw new Error(`postgres did not start in 30 s: ${log.slice(-2000)}`);
        await new Promise((r) => setTimeout(r, 100));
      }
    }
  };
  const stop = async () => {
    const proc = child;
    child = null;
    if (!proc || proc.exitCode !== null) return;
    const exited = new Promise((r) => proc.once('exit', r));
    // Fast shutdown (ends every session), sent to the postmaster itself: runuser does not pass SIGINT on.
    const pid = Number(fs.readFileSync(path.join(data, 'postmaster.pid'), 'utf8').split('\n')[0]);
    try {
      process.kill(pid, 'SIGINT');
    } catch {
      proc.kill('SIGINT');
    }
    await exited;
  };
  /** The postmaster and its children (the backends), from /proc. */
  const serverPids = (): number[] => {
    const main = Number(fs.readFileSync(path.join(data, 'postmaster.pid'), 'utf8').split('\n')[0]);
    const kids = fs
      .readdirSync('/proc')
      .filter((d) => /^\d+$/.test(d))
      .filter((d) => {
        try {
          return (
            Number(
              fs
                .readFileSync(`/proc/${d}/stat`, 'utf8')
                .replace(/^.*\) /s, '')
                .split(' ')[1],
            ) === main
          );
        } catch {
          return false;
        }
      });
    return [main, ...kids.map(Number)];
  };
  // A test process that exits without its afterAll (a crash, a time-out) must not leave the server running.
  const killOnExit = () => {
    try {
      process.kill(Number(fs.readFileSync(path.join(data, 'postmaster.pid'), 'utf8').split('\n')[0]), 'SIGQUIT');
    } catch {
      // not running
    }
  };
  process.once('exit', killOnExit);
  await start();
  let n = 0;
  return {
    port,
    async createDatabase() {
      const name = `hearth_${process.pid}_${++n}`;
      const admin = new pg.Client({ host: '127.0.0.1', port, user: USER, database: 'postgres' });
      await admin.connect();
      try {
        await admin.query(`CREATE DATABASE ${name}`);
      } finally {
        await admin.end();
      }
      return `postgres://${USER}@127.0.0.1:${port}/${name}`;
    },
    stop,
    start,
    freeze: () => serverPids().forEach((pid) => process.kill(pid, 'SIGSTOP')),
    thaw: () => {
      serverPids().forEach((pid) => process.kill(pid, 'SIGCONT'));
      if (child?.pid !== undefined) process.kill(child.pid, 'SIGCONT'); // runuser stops itself when its child stops
    },
    async destroy() {
      process.off('exit', killOnExit);
      await stop();
      fs.rmSync(dir, { recursive: true, force: true });
    },
  };
}

/** One server for the whole test file (started in beforeAll, destroyed in afterAll). */
export function usePostgres(): { readonly server: PostgresServer } {
  let server: PostgresServer | undefined;
  beforeAll(async () => {
    server = await startPostgres();
  }, 60_000);
  afterAll(async () => {
    await server?.destroy();
  });
  return {
    get server() {
      if (!server) throw new Error('usePostgres: the server runs only inside tests and their hooks');
      return server;
    },
  };
}
