import { type ChildProcess, spawn, spawnSync } from 'node:child_process';
import fs from 'node:fs';
import http from 'node:http';
import net from 'node:net';
import os from 'node:os';
import path from 'node:path';
import type { Logger } from '../log/logger.ts';

/**
 * The managed HTTP front: `hearth serve` runs HAProxy with the shipped `deploy/haproxy/haproxy.cfg` on the public
 * address, in front of its own uWS server on an ephemeral loopback port. uWebSockets.js (either pinned build: docs/runtimes.md)
 * closes a connection without an answer on malformed framing and on a request pipelined behind one still being
 * answered, and its parser has no hook; HAProxy's strict HTTP/1.1 parser answers those (400 / 431 / 505 ...) and
 * passes pipelined requests to Hearth one at a time, so each gets its answer.
 *
 * Contracts:
 * - Hearth binds the public socket itself (so `--port 0`, address-in-use and permissions behave as without the
 *   front) and hands it to HAProxy as an inherited descriptor (`bind fd@3`); Node never accepts on it.
 * - The client's address reaches Hearth in `x-hearth-peer`, believed only next to `x-hearth-front: <secret>` (a
 *   random value per start, given to HAProxy in its environment): a local process that connects to the loopback
 *   port directly is just a client at 127.0.0.1. The front replaces both headers if a client sends them.
 * - HAProxy dies with Hearth (`setpriv --pdeathsig`, where available); if it exits on its own it is started again.
 * - `stopAccepting` is HAProxy's soft stop (listener closed, connections finish their exchange); `close` ends it.
 */

const CONFIG = path.resolve(import.meta.dirname, '../../deploy/haproxy/haproxy.cfg');
/** Oldest HAProxy the shipped configuration is written for. */
const MIN_VERSION = [2, 6] as const;
const READY_TIMEOUT_MS = 10_000;
const RESTART_DELAY_MS = 1_000;
const STOP_TIMEOUT_MS = 3_000;
/** HAProxy's niceness (Hearth's own is 0): see spawnOnce. */
const FRONT_NICE = 10;

export interface HaproxyBinary {
  bin: string;
  version: string;
}

/** The haproxy binary (Debian installs it in /usr/sbin, which a non-root PATH may lack) or why there is none usable. */
export function locateHaproxy(): HaproxyBinary | { missing: string } {
  for (const bin of ['haproxy', '/usr/sbin/haproxy', '/usr/local/sbin/haproxy']) {
    const r = spawnSync(bin, ['-v'], { encoding: 'utf8', timeout: 5_000 });
    if (r.status !== 0) continue;
    const m = /version (\d+)\.(\d+)\S*/.exec(r.stdout);
    if (!m) return { missing: `${bin} -v printed no version` };
    const [major, minor] = [Number(m[1]), Number(m[2])];
    if (major < MIN_VERSION[0] || (major === MIN_VERSION[0] && minor < MIN_VERSION[1])) {
      return { missing: `${bin} is version ${major}.${minor}; the front needs ${MIN_VERSION.join('.')} or later` };
    }
    return { bin, version: m[0].slice('version '.length) };
  }
  return { missing: 'haproxy is not installed (Debian package `haproxy`)' };
}

export interface FrontOptions {
  haproxy: HaproxyBinary;
  host: string;
  port: number;
  /** host:port where Hearth's uWS server listens (loopback). */
  backend: string;
  /** Proves to Hearth that a request came through the front (EdgeStyle.frontSecret). */
  secret: string;
  /** Largest declared Content-Length the front lets through: Hearth's largest route limit. */
  bodyLimit: number;
  log: Logger;
}

export interface ManagedFront {
  /** The bound public port (the chosen one with port 0). */
  readonly port: number;
  /** Soft stop: no new connections; requests already sent finish. Idempotent. */
  stopAccepting(): void;
  /** After stopAccepting: resolves once HAProxy exited by itself (every exchange done) or after `maxMs`. */
  exited(maxMs: number): Promise<void>;
  /** Ends HAProxy (hard stop) and waits for it to exit. Idempotent. */
  close(): Promise<void>;
}

/** Binds host:port, starts HAProxy on it and resolves once a request through it reached Hearth. */
export async function startManagedFront(o: FrontOptions): Promise<ManagedFront> {
  let child = await spawnOnce(o, o.port);
  const port = child.port;
  let state: 'running' | 'stopping' | 'closed' = 'running';
  let restartTimer: NodeJS.Timeout | null = null;

  const supervise = (c: Spawned) => {
    c.proc.once('exit', (code, signal) => {
      if (state !== 'running') return;
      o.log.error('HTTP front (haproxy) exited; starting it again', { code, signal, output: c.output().slice(-2000) });
      const restart = (delay: number) => {
        restartTimer = setTimeout(() => {
          restartTimer = null;
          if (state !== 'running') return;
          spawnOnce(o, port).then(
            (next) => {
              if (state !== 'running') return void stopProcess(next.proc);
              child = next;
              supervise(next);
              o.log.info('HTTP front (haproxy) running again', { port });
            },
            (err: unknown) => {
              o.log.error('HTTP front (haproxy) failed to start again; retrying', {
                error: err instanceof Error ? err.message : String(err),
              });
              restart(Math.min(delay * 2, 30_000));
            },
          );
        }, delay);
      };
      restart(RESTART_DELAY_MS);
    });
  };
  supervise(child);

  let closing: Promise<void> | null = null;
  return {
    port,
    stopAccepting: () => {
      if (state !== 'running') return;
      state = 'stopping';
      if (restartTimer) clearTimeout(restartTimer);
      if (isAlive(child.proc)) child.proc.kill('SIGUSR1');
    },
    exited: async (maxMs) => {
      if (!isAlive(child.proc)) return;
      let timer: NodeJS.Timeout | undefined;
      await Promise.race([
        new Promise((r) => child.proc.once('exit', r)),
        new Promise((r) => {
          timer = setTimeout(r, maxMs);
        }),
      ]);
      clearTimeout(timer);
    },
    close: () => {
      closing ??= (async () => {
        state = 'closed';
        if (restartTimer) clearTimeout(restartTimer);
        await stopProcess(child.proc);
      })();
      return closing;
    },
  };
}

interface Spawned {
  proc: ChildProcess;
  port: number;
  output(): string;
}

/** One HAProxy process on host:port (bound here, inherited there), ready when a /health request got Hearth's answer. */
async function spawnOnce(o: FrontOptions, port: number): Promise<Spawned> {
  const listener = await bindPublic(o.host, port);
  const fd = (listener as unknown as { _handle: { fd: number } })._handle.fd;
  const boundPort = (listener.address() as net.AddressInfo).port;
  // The config's tunables (HEARTH_FRONT_THREADS / _MAXCONN / _ANSWER_TIMEOUT / _CLIENT_TIMEOUT) pass through from
  // Hearth's environment; where it listens, what it forwards to and its secret are Hearth's; TLS is the stand-alone front's.
  const env: NodeJS.ProcessEnv = { ...process.env };
  delete env.HEARTH_FRONT_CERT;
  Object.assign(env, {
    HEARTH_FRONT_BIND: 'fd@3',
    HEARTH_BACKEND: o.backend,
    // haproxy.cfg counts 10 digits or more as over the limit (its hdr_val is 32-bit): the limit stays below 1e9.
    HEARTH_FRONT_BODY_LIMIT: String(Math.min(o.bodyLimit, 999_999_999)),
    HEARTH_FRONT_SECRET: o.secret,
  });
  const args = ['-db', '-f', CONFIG];
  const setpriv = fs.existsSync('/usr/bin/setpriv') ? '/usr/bin/setpriv' : null;
  let proc: ChildProcess;
  try {
    proc = setpriv
      ? spawn(setpriv, ['--pdeathsig', 'KILL', '--', o.haproxy.bin, ...args], {
          env,
          stdio: ['ignore', 'pipe', 'pipe', fd],
        })
      : spawn(o.haproxy.bin, args, { env, stdio: ['ignore', 'pipe', 'pipe', fd] });
  } finally {
    listener.close(); // HAProxy holds its own copy of the socket; Node must never accept on it
  }
  let output = '';
  // HAProxy's own log (stderr, `notice` and up): alerts and warnings are Hearth's warnings, the rest debug.
  const collect = (d: Buffer) => {
    output = (output + d.toString()).slice(-16_384);
    for (const raw of d.toString().split('\n')) {
      const line = raw.trim();
      if (line === '') continue;
      const priority = /^<(\d+)>/.exec(line); // syslog "short" format: facility * 8 + severity (4 = warning)
      const lifecycle = /Proxy \S+ (started|stopped)|Stopping (frontend|backend|proxy)/.test(line); // HAProxy warns on its own stop
      if (!lifecycle && (/\[(ALERT|WARNING|EMERG)\]/.test(line) || (priority !== null && Number(priority[1]) % 8 <= 4)))
        o.log.warn('haproxy', { line });
      else o.log.debug('haproxy', { line });
    }
  };
  proc.stdout!.on('data', collect);
  proc.stderr!.on('data', collect);
  proc.on('error', (err) => {
    output += `\n${err.message}`;
  });
  // Below the model's threads: a front woken for a few bytes then waits for a free core instead of preempting a
  // compute thread mid-step (ggml's threads meet at barriers, so one preempted thread stalls the whole step), and
  // a flood of requests competes with generation at a lower weight.
  if (proc.pid !== undefined) {
    try {
      os.setPriority(proc.pid, FRONT_NICE);
    } catch {
      // not permitted here: it runs at Hearth's priority
    }
  }
  const spawned = { proc, port: boundPort, output: () => output };
  try {
    await waitUntilServing(o.host, boundPort, proc);
  } catch (err) {
    await stopProcess(proc);
    throw new Error(
      `the HTTP front (haproxy) did not start: ${err instanceof Error ? err.message : String(err)}\n${output.slice(-2000)}`,
    );
  }
  return spawned;
}

function bindPublic(host: string, port: number): Promise<net.Server> {
  return new Promise((resolve, reject) => {
    const server = net.createServer();
    server.once('error', (err) =>
      reject(new Error(`cannot listen on ${host}:${port} (${(err as NodeJS.ErrnoException).code ?? err.message})`)),
    );
    server.listen({ host, port, exclusive: true, backlog: 511 }, () => resolve(server));
  });
}

/** Polls GET /health through the front until Hearth's answer (it carries x-request-id) comes back. */
async function waitUntilServing(host: string, port: number, proc: ChildProcess): Promise<void> {
  const target = host === '0.0.0.0' || host === '' ? '127.0.0.1' : host === '::' ? '::1' : host;
  const deadline = performance.now() + READY_TIMEOUT_MS;
  while (performance.now() < deadline) {
    if (!isAlive(proc)) throw new Error(`haproxy exited (code ${proc.exitCode}, signal ${proc.signalCode})`);
    if (await probe(target, port)) return;
    await new Promise((r) => setTimeout(r, 25));
  }
  throw new Error(`no answer through the front within ${READY_TIMEOUT_MS / 1000} s`);
}

function probe(host: string, port: number): Promise<boolean> {
  return new Promise((resolve) => {
    const req = http.get(
      { host, port, path: '/health', agent: false, timeout: 2_000, headers: { connection: 'close' } },
      (res) => {
        res.resume();
        resolve(res.headers['x-request-id'] !== undefined);
      },
    );
    req.on('timeout', () => req.destroy());
    req.on('error', () => resolve(false));
  });
}

function isAlive(proc: ChildProcess): boolean {
  return proc.pid !== undefined && proc.exitCode === null && proc.signalCode === null;
}

/** SIGTERM (HAProxy's hard stop), SIGKILL if it is still there after STOP_TIMEOUT_MS; resolves on exit. */
async function stopProcess(proc: ChildProcess): Promise<void> {
  if (!isAlive(proc)) return;
  const exited = new Promise<void>((resolve) => proc.once('exit', () => resolve()));
  proc.kill('SIGTERM');
  const timer = setTimeout(() => proc.kill('SIGKILL'), STOP_TIMEOUT_MS);
  await exited;
  clearTimeout(timer);
}
