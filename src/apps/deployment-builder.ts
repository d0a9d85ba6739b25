import { execFile } from 'node:child_process';
import fs from 'node:fs';
import path from 'node:path';
import { runToEnd } from './app-process.ts';
import {
  type RepositoryAccess,
  type RepositoryPermit,
  decideRepository,
  type Resolver,
  systemResolver,
} from './repository-policy.ts';
import { IsolatedNetwork } from './app-network.ts';
import { isolatesNetwork, launchPlan, type SandboxOptions } from './sandbox.ts';

/**
 * The fetch and build steps of a deployment (contract "Build"), each with a time limit and its output in
 * the build log: clone a repository at a ref (git runs as Hearth, outside the sandbox, confined by the
 * repository's permit: repository-policy.ts), then, in the sandbox, `npm ci --omit=dev` (lock file) or `npm install --omit=dev`
 * when the package has dependencies, then its `build` script if any. `startCommand` finds what runs the
 * web process: a Procfile `web:` line, else the package's `start` script. Failures throw DeploymentFailure
 * whose message is the deployment's `reason` (`build_failed: ...`).
 */
export class DeploymentFailure extends Error {
  override name = 'DeploymentFailure';
}

export type BuildLog = (line: string) => void;

const GIT_ENV = {
  PATH: process.env.PATH ?? '/usr/bin:/bin',
  GIT_TERMINAL_PROMPT: '0',
  GIT_ASKPASS: '/bin/true',
  SSH_ASKPASS: '/bin/true',
  GIT_CONFIG_NOSYSTEM: '1',
  HOME: '/nonexistent',
};
const GIT_SAFE = ['-c', 'core.hooksPath=/dev/null', '-c', 'advice.detachedHead=false'];

function git(
  args: string[],
  timeoutMs: number,
  cwd?: string,
  signal?: AbortSignal,
): Promise<{ ok: boolean; stdout: string; stderr: string }> {
  return new Promise((resolve) => {
    execFile(
      'git',
      [...GIT_SAFE, ...args],
      {
        cwd,
        env: GIT_ENV,
        timeout: timeoutMs,
        killSignal: 'SIGKILL',
        maxBuffer: 4 << 20,
        ...(signal ? { signal } : {}),
      },
      (err, stdout, stderr) => {
        resolve({
          ok: err === null,
          stdout: String(stdout),
          stderr:
            String(stderr) +
            (err && (err as { killed?: boolean }).killed
              ? `\n(timed out after ${Math.round(timeoutMs / 1000)} s)`
              : ''),
        });
      },
    );
  });
}

/** Text with the credentials of any `scheme://user:secret@host` URL masked (build logs, views, Hearth's log). */
export function maskUrlCredentials(text: string): string {
  return text.replace(/([a-z][a-z0-9+.-]*:\/\/)[^/@\s]+@/gi, '$1***@');
}

/** A repository URL git may be asked for: anything git can clone, but never an option or a command transport. */
export function isAcceptableRepositoryUrl(url: string): boolean {
  return (
    url.length > 0 && url.length <= 2048 && !url.startsWith('-') && !/^(ext|fd)::/i.test(url) && !/[\0\n\r]/.test(url)
  );
}

/** Whether git can reach the permitted repository (ls-remote); the error text otherwise. */
export async function probeRepository(permit: RepositoryPermit, timeoutMs: number): Promise<string | null> {
  const r = await git([...permit.gitArgs, 'ls-remote', '--quiet', '--', permit.url, 'HEAD'], timeoutMs);
  return r.ok ? null : maskUrlCredentials(lastLines(r.stderr, 3)) || 'git ls-remote failed';
}

/**
 * Clones `url` into `dest` (which must not exist) at `ref` (branch, tag or commit; default HEAD); returns the
 * commit. The URL is judged under `access` again first: a queued deployment clones later than its probe.
 */
export async function fetchRepository(
  url: string,
  access: RepositoryAccess,
  ref: string | null,
  dest: string,
  timeoutMs: number,
  log: BuildLog,
  signal?: AbortSignal,
  resolve: Resolver = systemResolver,
): Promise<string> {
  log(`$ git clone ${maskUrlCredentials(url)}${ref ? ` (ref ${ref})` : ''}`);
  const permit = await decideRepository(url, access, resolve);
  if (permit.kind === 'refused') throw new DeploymentFailure(`build_failed: repository not allowed: ${permit.reason}`);
  if (permit.kind === 'unreachable')
    throw new DeploymentFailure(`build_failed: repository unreachable: ${permit.reason}`);
  const clone = await git(
    [...permit.gitArgs, 'clone', '--quiet', '--no-checkout', '--', permit.url, dest],
    timeoutMs,
    undefined,
    signal,
  );
  if (!clone.ok)
    throw new DeploymentFailure(`build_failed: git clone failed: ${maskUrlCredentials(lastLines(clone.stderr, 3))}`);
  const candidates = ref === null ? ['HEAD'] : [`refs/remotes/origin/${ref}`, `refs/tags/${ref}`, ref];
  let commit: string | null = null;
  for (const c of candidates) {
    if (c.startsWith('-')) continue;
    const r = await git(['rev-parse', '--verify', '--quiet', `${c}^{commit}`], timeoutMs, dest);
    if (r.ok) {
      commit = r.stdout.trim();
      break;
    }
  }
  if (commit === null) throw new DeploymentFailure(`build_failed: ref '${ref}' not found in the repository`);
  const checkout = await git(['checkout', '--quiet', '--detach', commit], timeoutMs, dest);
  if (!checkout.ok) throw new DeploymentFailure(`build_failed: git checkout failed: ${lastLines(checkout.stderr, 3)}`);
  await fs.promises.rm(path.join(dest, '.git'), { recursive: true, force: true });
  log(`checked out ${commit}`);
  return commit;
}

interface PackageJson {
  dependencies?: Record<string, string>;
  scripts?: Record<string, string>;
}

/**
 * The text of a file at the top of an app's directory, or null when there is none. The app writes that
 * directory (archive, repository, build steps, its process) and Hearth reads it on the host with its own
 * rights, so the read never follows a symbolic link (a target on the host would end up in the build log)
 * and opens nothing but a regular file (O_NONBLOCK: a fifo the app made would block the main thread).
 */
function readAppFile(dir: string, name: string): string | null {
  let fd: number;
  try {
    fd = fs.openSync(path.join(dir, name), fs.constants.O_RDONLY | fs.constants.O_NOFOLLOW | fs.constants.O_NONBLOCK);
  } catch (err) {
    const code = (err as NodeJS.ErrnoException).code;
    if (code === 'ENOENT') return null;
    throw new DeploymentFailure(
      `build_failed: ${name} ${code === 'ELOOP' ? 'is not a regular file (a symbolic link)' : `cannot be read (${code})`}`,
    );
  }
  try {
    if (!fs.fstatSync(fd).isFile()) throw new DeploymentFailure(`build_failed: ${name} is not a regular file`);
    return fs.readFileSync(fd, 'utf8');
  } finally {
    fs.closeSync(fd);
  }
}

function readPackage(dir: string): PackageJson | null {
  const text = readAppFile(dir, 'package.json');
  if (text === null) return null;
  try {
    const value = JSON.parse(text) as unknown;
    if (typeof value !== 'object' || value === null || Array.isArray(value)) throw new Error('not an object');
    return value as PackageJson;
  } catch (err) {
    throw new DeploymentFailure(`build_failed: package.json is not valid JSON (${(err as Error).message})`);
  }
}

/** Installs dependencies and runs the build script, in the sandbox, each step within `stepTimeoutMs`; `signal` stops the step running. */
export async function buildApp(
  dir: string,
  sandbox: SandboxOptions,
  env: Record<string, string>,
  stepTimeoutMs: number,
  log: BuildLog,
  signal?: AbortSignal,
): Promise<void> {
  const pkg = readPackage(dir);
  if (pkg === null) {
    if (!fs.existsSync(path.join(dir, 'Procfile')))
      throw new DeploymentFailure('build_failed: the app has neither a package.json nor a Procfile');
    log('no package.json: nothing to install or build');
    return;
  }
  const buildEnv = {
    ...env,
    NODE_ENV: 'production',
    npm_config_cache: '/tmp/.npm',
    npm_config_update_notifier: 'false',
    npm_config_fund: 'false',
    npm_config_audit: 'false',
  };
  const steps: string[] = [];
  const hasLock =
    fs.existsSync(path.join(dir, 'package-lock.json')) || fs.existsSync(path.join(dir, 'npm-shrinkwrap.json'));
  if (Object.keys(pkg.dependencies ?? {}).length > 0)
    steps.push(hasLock ? 'npm ci --omit=dev' : 'npm install --omit=dev');
  else log('no dependencies: install skipped');
  if (typeof pkg.scripts?.build === 'string') steps.push('npm run build');
  for (const step of steps) {
    log(`$ ${step}`);
    if (signal?.aborted)
      throw new DeploymentFailure('build_failed: stopped (the app was deleted, or Hearth is stopping)');
    let network: IsolatedNetwork | undefined;
    try {
      if (isolatesNetwork(sandbox)) network = await IsolatedNetwork.open(sandbox.network, {});
    } catch (err) {
      throw new DeploymentFailure(
        `build_failed: the build's network namespace could not be made: ${(err as Error).message}`,
      );
    }
    const r = await runToEnd(
      launchPlan(sandbox, dir, step, buildEnv, network),
      stepTimeoutMs,
      (_s, line) => log(line),
      signal,
      network && (() => network.close()),
    );
    if (signal?.aborted)
      throw new DeploymentFailure(`build_failed: '${step}' stopped (the app was deleted, or Hearth is stopping)`);
    if (r.timedOut)
      throw new DeploymentFailure(`build_failed: '${step}' timed out after ${Math.round(stepTimeoutMs / 1000)} s`);
    if (r.code !== 0)
      throw new DeploymentFailure(
        `build_failed: '${step}' ${r.error ? `could not start (${r.error})` : r.code === null ? `was killed (${r.signal})` : `exited with code ${r.code}`}`,
      );
  }
}

/** The web process command: a Procfile `web:` line, else the package's `start` script. */
export function startCommand(dir: string): string {
  const procfile = readAppFile(dir, 'Procfile');
  if (procfile !== null) {
    const m = /^web:\s*(.+)$/m.exec(procfile);
    if (m) return m[1]!.trim();
  }
  const start = readPackage(dir)?.scripts?.start;
  if (typeof start === 'string' && start.trim() !== '') return start.trim();
  throw new DeploymentFailure(
    "build_failed: no start command: add a Procfile 'web:' line or a 'start' script to package.json",
  );
}

function lastLines(text: string, n: number): string {
  return text.trim().split('\n').slice(-n).join(' / ');
}
