import { execFile } from 'node:child_process';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { processAlive } from '../lifecycle/process-alive.ts';

/**
 * Apps and the network (contract "Apps and the network"). With `isolated` (the default), every app process
 * and every build step runs in a network namespace of its own, made here before the launch and removed after
 * its exit:
 * - `ip netns add` makes it (named `hearth-<Hearth's pid>-<n>` under /run/netns, so a later Hearth can remove
 *   what a killed one left: `removeStaleNamespaces`);
 * - pasta (Debian package `passt`) connects it to the outside world in user mode: outbound TCP/UDP leaves
 *   through ordinary sockets of the host; `--no-map-gw` (the gateway is not the host's loopback), `-T` only
 *   for Hearth's public port (the namespace's 127.0.0.1:<api port> reaches the host's 127.0.0.1:<api port>,
 *   nothing else of the host's loopback), `-t 127.0.0.1/<port>` for the app's own port (the proxy and the
 *   health check connect to the host's 127.0.0.1:<port>, pasta splices the connection into the namespace's
 *   loopback, where the app listens as before), no UDP forwarding either way. pasta leaves when the
 *   namespace is deleted.
 * - `unreachable` routes inside the namespace for 169.254.0.0/16 (cloud metadata), fd00:ec2::254 and every
 *   address the host has at launch (the services bound to its private and public addresses).
 * Loopback, abstract Unix sockets and the namespace's port space are the namespace's own, so Hearth's
 * internal port, other apps' ports and every service on the host's loopback are out of reach; the sandbox's
 * mount namespace hides the host's Unix socket files.
 * Root only (`ip netns add`; the pasta of Debian 12 cannot join a namespace without root): without it,
 * `networkProblem` says so and `PUT /yam` fails with that reason. `host` shares the host's network (the
 * behaviour before isolation; a warning at boot). Main thread.
 */
export type AppNetworkMode = 'isolated' | 'host';

export interface AppNetworkOptions {
  mode: AppNetworkMode;
  /** The pasta binary (Debian package passt). */
  pastaPath: string;
}

/** Where a process in an isolated namespace is reached and what it may reach. */
export interface NetworkRequest {
  /** The app's port, forwarded from the host's 127.0.0.1 into the namespace's loopback (none for a build step). */
  appPort?: number;
  /** Hearth's public port, reachable from the namespace's 127.0.0.1 (none for a build step). */
  apiPort?: number;
}

const NETNS_DIR = '/run/netns';
const NAME_PREFIX = 'hearth-';
const STALE_NAME = /^hearth-(\d+)-\d+$/;
const TOOL_TIMEOUT_MS = 10_000;
/** Never reachable from an app: link-local (cloud metadata at 169.254.169.254) and AWS's IPv6 metadata address. */
const ALWAYS_BLOCKED = ['169.254.0.0/16', 'fd00:ec2::254/128'];

let sequence = 0;

/** The iproute2 binary (Debian installs it in /usr/sbin or /sbin, which a non-root PATH may lack). */
function ipBinary(): string {
  for (const p of ['/usr/sbin/ip', '/sbin/ip', '/usr/bin/ip', '/bin/ip']) if (fs.existsSync(p)) return p;
  return 'ip';
}

function nsenterBinary(): string {
  for (const p of ['/usr/bin/nsenter', '/bin/nsenter']) if (fs.existsSync(p)) return p;
  return 'nsenter';
}

/**
 * pasta's options that depend on its version, by binary (asked once per process). Since 2024 pasta hands a
 * connection forwarded from the host's loopback (`-t`) to the namespace's own address unless told
 * `--host-lo-to-ns-lo`: the app, listening on the namespace's 127.0.0.1, would reset every proxied connection
 * (seen with Debian 13's passt). Debian 12's passt has no such option and splices to the loopback already.
 */
const pastaVersionOptions = new Map<string, Promise<string[]>>();
function pastaOptions(pastaPath: string): Promise<string[]> {
  let known = pastaVersionOptions.get(pastaPath);
  if (known === undefined) {
    known = new Promise((resolve) => {
      // An older pasta refuses the option (exit 1); one that has it prints its version (exit 0).
      execFile(pastaPath, ['--host-lo-to-ns-lo', '--version'], { timeout: TOOL_TIMEOUT_MS }, (err) =>
        resolve(err ? [] : ['--host-lo-to-ns-lo']),
      );
    });
    pastaVersionOptions.set(pastaPath, known);
  }
  return known;
}

function run(cmd: string, args: string[], input?: string): Promise<void> {
  return new Promise((resolve, reject) => {
    const child = execFile(cmd, args, { timeout: TOOL_TIMEOUT_MS, encoding: 'utf8' }, (err, _stdout, stderr) => {
      if (!err) return resolve();
      const code = (err as NodeJS.ErrnoException).code;
      reject(
        new Error(
          code === 'ENOENT'
            ? `'${cmd}' is not installed`
            : `${cmd} ${args.slice(0, 4).join(' ')}: ${(stderr || err.message)
                .replace(/Failed to send \d+ bytes to syslog\n?/g, '')
                .trim()
                .slice(0, 300)}`,
        ),
      );
    });
    if (input !== undefined) child.stdin?.end(input);
  });
}

/** The host's own addresses now (every interface but loopback), as /32 and /128 routes; IPv6 link-local ones need no route. */
function hostAddresses(): string[] {
  const out: string[] = [];
  for (const list of Object.values(os.networkInterfaces())) {
    for (const a of list ?? []) {
      if (a.internal) continue;
      if (a.family === 'IPv4') out.push(`${a.address}/32`);
      else if (!a.address.toLowerCase().startsWith('fe80:')) out.push(`${a.address}/128`);
    }
  }
  return out;
}

/**
 * One process's network namespace. Owned by whoever opened it (AppRuntime for an app process, the build for
 * a build step), who calls `close()` once the process exited; `close()` is idempotent and never throws.
 */
export class IsolatedNetwork {
  private closed: Promise<void> | null = null;
  /** pasta's pid (its --pid file), killed at close should it outlive the namespace; null if not started. */
  private pastaPid: number | null = null;

  private constructor(readonly name: string) {}

  /** The namespace's path, for `nsenter --net=`. */
  get path(): string {
    return `${NETNS_DIR}/${this.name}`;
  }

  /** Makes the namespace, blocks the host's addresses in it and starts pasta; throws why it could not (nothing is left behind). */
  static async open(o: AppNetworkOptions, want: NetworkRequest): Promise<IsolatedNetwork> {
    const net = new IsolatedNetwork(`${NAME_PREFIX}${process.pid}-${++sequence}`);
    const ip = ipBinary();
    await run(ip, ['netns', 'add', net.name]);
    try {
      const pasta = [
        '--quiet',
        '--config-net',
        '--no-map-gw',
        '--runas',
        '0',
        ...(await pastaOptions(o.pastaPath)),
        '-t',
        want.appPort !== undefined ? `127.0.0.1/${want.appPort}` : 'none',
        '-T',
        want.apiPort !== undefined ? String(want.apiPort) : 'none',
        '-u',
        'none',
        '-U',
        'none',
        '--netns',
        net.path,
        '--pid',
        net.pidFile,
      ];
      await run(o.pastaPath, pasta); // returns once the namespace is configured (pasta goes on in the background)
      net.pastaPid = await readPid(net.pidFile);
      const routes = [...ALWAYS_BLOCKED, ...hostAddresses()]
        .map((dst) => `route replace unreachable ${dst}\n`)
        .join('');
      await run(ip, ['-n', net.name, '-batch', '-'], routes);
    } catch (err) {
      await net.close();
      throw err;
    }
    return net;
  }

  /** Argv that runs `command args` inside the namespace. */
  wrap(command: string, args: string[]): { command: string; args: string[] } {
    return { command: nsenterBinary(), args: [`--net=${this.path}`, '--', command, ...args] };
  }

  /** Where pasta writes its pid (written by the time its foreground part returns). */
  private get pidFile(): string {
    return path.join(os.tmpdir(), `${this.name}.pasta.pid`);
  }

  /**
   * Deletes the namespace; pasta leaves with it. Once a pasta was seen to outlive its namespace (and SIGTERM) on
   * Debian 12's passt, so it is then killed by pid, when that pid is still a pasta of this namespace.
   */
  close(): Promise<void> {
    this.closed ??= (async () => {
      await run(ipBinary(), ['netns', 'delete', this.name]).catch(() => {});
      await fs.promises.rm(this.pidFile, { force: true }).catch(() => {});
      const pid = this.pastaPid;
      if (pid === null) return;
      const cmdline = await fs.promises.readFile(`/proc/${pid}/cmdline`, 'utf8').catch(() => '');
      if (cmdline.split('\0').includes(this.path)) {
        try {
          process.kill(pid, 'SIGKILL');
        } catch {
          // gone meanwhile
        }
      }
    })();
    return this.closed;
  }
}

/** The pid pasta wrote to `file`, or null (an older pasta, or none written). */
async function readPid(file: string): Promise<number | null> {
  const text = await fs.promises.readFile(file, 'utf8').catch(() => '');
  const pid = Number.parseInt(text.trim(), 10);
  return Number.isInteger(pid) && pid > 1 ? pid : null;
}

/** Why isolated networking cannot work here (a trial namespace), or null; nothing to check for `host`. */
export async function networkProblem(o: AppNetworkOptions): Promise<string | null> {
  if (o.mode === 'host') return null;
  if (typeof process.getuid === 'function' && process.getuid() !== 0) {
    return "isolated app networking (--app-network isolated) makes a network namespace per app and needs Hearth to run as root; run it as root, or start it with --app-network host (apps then share the host's network)";
  }
  try {
    const net = await IsolatedNetwork.open(o, {});
    await net.close();
    return null;
  } catch (err) {
    const message = (err as Error).message;
    if (message.includes(`'${o.pastaPath}' is not installed`))
      return `isolated app networking needs pasta ('${o.pastaPath}'): install the Debian package passt, or start Hearth with --app-network host (apps then share the host's network)`;
    return `cannot give apps a network of their own (--app-network isolated): ${message}`;
  }
}

/** Deletes the namespaces a Hearth that is no longer running left behind (killed before it could); returns how many. */
export async function removeStaleNamespaces(): Promise<number> {
  let names: string[];
  try {
    names = await fs.promises.readdir(NETNS_DIR);
  } catch {
    return 0;
  }
  let removed = 0;
  for (const name of names) {
    const m = STALE_NAME.exec(name);
    if (!m || Number(m[1]) === process.pid || processAlive(Number(m[1]))) continue;
    await run(ipBinary(), ['netns', 'delete', name]).then(
      () => removed++,
      () => {},
    );
  }
  return removed;
}

/**
 * HEARTH_API_URL: Hearth's public API as an app reaches it. Isolated: the namespace's loopback, forwarded to
 * the host's (Hearth must listen on loopback or on every address for that: see `apiUnreachableReason`).
 * Host: the address Hearth listens on (loopback for a wildcard).
 */
export function hearthApiUrl(mode: AppNetworkMode, listenHost: string, port: number): string {
  if (mode === 'isolated') return `http://127.0.0.1:${port}`;
  const host =
    listenHost === '0.0.0.0' || listenHost === ''
      ? '127.0.0.1'
      : listenHost === '::'
        ? '[::1]'
        : listenHost.includes(':')
          ? `[${listenHost}]`
          : listenHost;
  return `http://${host}:${port}`;
}

/** Why apps in their own namespace cannot reach HEARTH_API_URL (Hearth not listening on the host's 127.0.0.1), or null. */
export function apiUnreachableReason(mode: AppNetworkMode, listenHost: string): string | null {
  if (mode !== 'isolated') return null;
  if (['0.0.0.0', '', '::', 'localhost', '127.0.0.1'].includes(listenHost)) return null;
  return `Hearth listens on ${listenHost} only: apps in their own network namespace reach Hearth's API through the host's 127.0.0.1, so HEARTH_API_URL will not answer them (listen on 127.0.0.1 or 0.0.0.0)`;
}
