import fs from 'node:fs';
import path from 'node:path';
import type { AppNetworkOptions, IsolatedNetwork } from './app-network.ts';

/**
 * How an app's commands are launched (contract "Isolation"). With `bwrap`, each command runs in a
 * bubblewrap sandbox: a fresh mount namespace holding only the read-only system (/usr and the /lib, /bin
 * links, a handful of /etc files for DNS and TLS), the Node runtime read-only, the app's own directory
 * read-write at /app, a private /tmp, /proc of its own pid namespace, and a minimal /dev; nothing of
 * Hearth's data dir, master key, other apps or Hearth's environment (`--clearenv`, then exactly the
 * variables given, and those only from the app's own command on: see CARRIER). The network: given an
 * IsolatedNetwork (`--app-network isolated`, app-network.ts), bwrap starts inside that namespace (nsenter);
 * otherwise it shares the host's. Either way the app listens on 127.0.0.1:PORT and Hearth proxies to it.
 *
 * The uid: when Hearth runs as root, bwrap runs privileged and the command drops to 65534 (nobody) with
 * setpriv (real uid, no capabilities, no_new_privs); otherwise an unprivileged user namespace maps the
 * caller to uid 65534. Limits: prlimit sets RLIMIT_DATA (memory: heap and anonymous mappings; not RLIMIT_AS, which WebAssembly reservations of Node's own fetch exceed), RLIMIT_NPROC
 * (processes, counted per uid) and RLIMIT_NOFILE (open files); cgroups are not used.
 * `none` runs the command directly (same env, same limits, no isolation): only when the operator asks.
 * Pure: builds argv; app-process.ts spawns it.
 */
export type SandboxMode = 'bwrap' | 'none';

export interface SandboxOptions {
  mode: SandboxMode;
  /** The bubblewrap binary. Defaults to `bwrap` (on PATH). */
  bwrapPath: string;
  /** RLIMIT_DATA in bytes. */
  memoryBytes: number;
  maxProcesses: number;
  maxOpenFiles: number;
  /** Whether app processes and build steps get a network namespace of their own (only with `bwrap`). */
  network: AppNetworkOptions;
}

/** Whether launches under `o` run in a network namespace of their own (`--app-sandbox none` shares everything). */
export const isolatesNetwork = (o: SandboxOptions): boolean => o.mode === 'bwrap' && o.network.mode === 'isolated';

export interface LaunchPlan {
  command: string;
  args: string[];
  env: Record<string, string>;
  cwd: string;
  /** More arguments, NUL-separated, that the launcher must write to the child's descriptor ARGS_FD (then end it). */
  argsFd?: Buffer;
}

/** The descriptor a LaunchPlan's `argsFd` goes to. */
export const ARGS_FD = 3;

export const SANDBOX_UID = 65534;
/** Where the app's directory appears inside the sandbox. */
export const APP_MOUNT = '/app';
const SYSTEM_PATH = '/usr/local/bin:/usr/bin:/bin';
const ENV_NAME = /^[A-Za-z_][A-Za-z0-9_]*$/;
/** The prefix the app's variables carry until the uid drop (see launchPlan). */
const CARRIER = 'HEARTH_CARRIED_';
const ETC_FILES = [
  '/etc/resolv.conf',
  '/etc/hosts',
  '/etc/nsswitch.conf',
  '/etc/host.conf',
  '/etc/ssl',
  '/etc/ca-certificates',
  '/etc/passwd',
  '/etc/group',
  '/etc/localtime',
  '/etc/alternatives',
];

export const runsAsRoot = (): boolean => typeof process.getuid === 'function' && process.getuid() === 0;

/** The Node installation prefix, when it is not already inside /usr (nvm, /opt/node ...). */
function nodePrefix(): string | null {
  const prefix = path.dirname(path.dirname(fs.realpathSync(process.execPath)));
  return prefix === '/usr' || prefix.startsWith('/usr/') ? null : prefix;
}

/** PATH inside the sandbox (and for `none`): the app's own bins, the Node runtime, the system. */
export function sandboxPath(appDir: string): string {
  const prefix = nodePrefix();
  return [`${appDir}/node_modules/.bin`, ...(prefix ? [`${prefix}/bin`] : []), SYSTEM_PATH].join(':');
}

/** Argv, env and cwd that run `shellCommand` (a /bin/sh -c line) for the app whose directory is `dir`, inside `network` when given (bwrap only). */
export function launchPlan(
  o: SandboxOptions,
  dir: string,
  shellCommand: string,
  env: Record<string, string>,
  network?: IsolatedNetwork,
): LaunchPlan {
  const limits = [
    '/usr/bin/prlimit',
    `--data=${o.memoryBytes}`,
    `--nproc=${o.maxProcesses}`,
    `--nofile=${o.maxOpenFiles}`,
    '--',
  ];
  if (o.mode === 'none') {
    return {
      command: limits[0]!,
      args: [...limits.slice(1), '/bin/sh', '-c', shellCommand],
      env: { ...env, PATH: sandboxPath(dir), HOME: dir },
      cwd: dir,
    };
  }
  const args: string[] = [
    '--die-with-parent',
    '--unshare-pid',
    '--unshare-ipc',
    '--unshare-uts',
    '--unshare-cgroup-try',
    '--hostname',
    'app',
  ];
  args.push('--ro-bind', '/usr', '/usr');
  for (const link of ['/bin', '/sbin', '/lib', '/lib32', '/lib64', '/libx32']) {
    let st: fs.Stats;
    try {
      st = fs.lstatSync(link);
    } catch {
      continue;
    }
    if (st.isSymbolicLink()) args.push('--symlink', fs.readlinkSync(link), link);
    else args.push('--ro-bind', link, link);
  }
  args.push('--perms', '0755', '--dir', '/etc'); // directories bwrap makes are 0700 otherwise: unreadable after the uid drop
  for (const f of ETC_FILES) args.push('--ro-bind-try', f, f);
  const prefix = nodePrefix();
  if (prefix) {
    // Its parents (/opt of /opt/node24, /home/u/.nvm/... of nvm) made readable first: bwrap would make them 0700,
    // and the app, past its uid drop, could not reach its own `node` (exit 127, "node: Permission denied").
    for (let dir = path.dirname(prefix), parents: string[] = []; ; dir = path.dirname(dir)) {
      if (dir === '/' || dir === path.dirname(dir)) {
        for (const parent of parents.reverse()) args.push('--perms', '0755', '--dir', parent);
        break;
      }
      parents.push(dir);
    }
    args.push('--ro-bind', prefix, prefix);
  }
  args.push(
    '--proc',
    '/proc',
    '--dev',
    '/dev',
    '--perms',
    '01777',
    '--tmpfs',
    '/tmp',
    '--bind',
    dir,
    APP_MOUNT,
    '--chdir',
    APP_MOUNT,
    '--clearenv',
  );
  // prlimit and setpriv run before the uid drop (as root when Hearth is root): the app's variables cross
  // them under carrier names no program reads (an LD_PRELOAD, LD_AUDIT, GCONV_PATH, GLIBC_TUNABLES or LANG
  // of the app's would run its code there), and a shell after the drop gives them their names back.
  // The app's values go to bwrap on a descriptor (`--args`), not its command line, which every local user
  // of the host can read in /proc for as long as the app runs.
  const inner: Record<string, string> = { ...env, PATH: sandboxPath(APP_MOUNT), HOME: APP_MOUNT };
  const names = Object.keys(inner);
  const hidden: string[] = [];
  for (const k of names) {
    if (!ENV_NAME.test(k)) throw new Error(`not an environment variable name: '${k}'`);
    (k in env ? hidden : args).push('--setenv', `${CARRIER}${k}`, inner[k]!);
  }
  if (hidden.length > 0) args.push('--args', String(ARGS_FD));
  const unwrap = [
    `set -- ${names.map((k) => `"$${CARRIER}${k}"`).join(' ')}`, // values first: a name may be another's carrier name
    ...(names.length > 0 ? [`unset ${names.map((k) => `${CARRIER}${k}`).join(' ')}`] : []),
    ...names.map((k, i) => `export ${k}="\${${i + 1}}"`),
    'exec /bin/sh -c "$0"',
  ].join('; ');
  const dropUid = runsAsRoot()
    ? [
        '/usr/bin/setpriv',
        `--reuid=${SANDBOX_UID}`,
        `--regid=${SANDBOX_UID}`,
        '--clear-groups',
        '--inh-caps=-all',
        '--bounding-set=-all',
        '--no-new-privs',
        '--',
      ]
    : [];
  if (!runsAsRoot()) args.push('--unshare-user', '--uid', String(SANDBOX_UID), '--gid', String(SANDBOX_UID));
  args.push('--', ...limits, ...dropUid, '/bin/sh', '-c', unwrap, shellCommand);
  const argv = network ? network.wrap(o.bwrapPath, args) : { command: o.bwrapPath, args };
  return {
    ...argv,
    env: {},
    cwd: '/',
    ...(hidden.length > 0 ? { argsFd: Buffer.from(`${hidden.join('\0')}\0`) } : {}),
  };
}

/** Gives the app's directory to the sandbox uid (root only: otherwise the caller's own files are the app's). */
export async function handOver(dir: string, mode: SandboxMode): Promise<void> {
  if (mode !== 'bwrap' || !runsAsRoot()) return;
  const walk = async (p: string): Promise<void> => {
    await fs.promises.lchown(p, SANDBOX_UID, SANDBOX_UID);
    const st = await fs.promises.lstat(p);
    if (!st.isDirectory()) return;
    for (const name of await fs.promises.readdir(p)) await walk(path.join(p, name));
  };
  await walk(dir);
}
