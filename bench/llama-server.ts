/**
 * llama.cpp's own `llama-server`, built from the exact llama.cpp source node-llama-cpp bundles, as the
 * baseline for `npm run bench:engine`.
 *
 *   node --import tsx bench/llama-server.ts [build]      build (or find) the binary, print its path
 *   node --import tsx bench/llama-server.ts --help-flags  print `llama-server --help`
 *
 * Binary resolution (ensureLlamaServer):
 *   1. $HEARTH_LLAMA_SERVER: a prebuilt binary, used as is;
 *   2. <cache>/<commit>/llama-server if it exists and answers --version (reused, never rebuilt);
 *   3. otherwise built offline: `git clone` of node_modules/node-llama-cpp/llama/gitRelease.bundle into
 *      <cache>/<commit>/src, cmake (Release, GGML_NATIVE=ON, no curl/openssl/web UI/tests/examples,
 *      GGML_OPENMP=OFF like node-llama-cpp's prebuilt CPU libraries, static libs), target llama-server
 *      only, under `nice -n 10`; the log goes to <cache>/<commit>/build.log.
 * <cache> is $HEARTH_LLAMA_SERVER_CACHE, else $XDG_CACHE_HOME/hearth/llama-server, else
 * ~/.cache/hearth/llama-server (outside the repository). $HEARTH_LLAMA_SERVER_CMAKE_ARGS (space
 * separated -D options) adds cmake options; a non-default set is cached under <commit>-<hash>/.
 * Concurrent callers serialise on <dir>.lock (a pid file; a stale one from a dead pid is taken over).
 */
import { type ChildProcess, spawn, spawnSync } from 'node:child_process';
import { createHash } from 'node:crypto';
import {
  existsSync,
  mkdirSync,
  readFileSync,
  renameSync,
  rmSync,
  writeFileSync,
  copyFileSync,
  chmodSync,
  openSync,
  closeSync,
} from 'node:fs';
import { createServer } from 'node:net';
import { availableParallelism, homedir } from 'node:os';
import { dirname, join, resolve } from 'node:path';
import { processAlive } from '../src/lifecycle/process-alive.ts';

const ROOT = resolve(import.meta.dirname, '..');
const NODE_LLAMA_CPP_LLAMA_DIR = join(ROOT, 'node_modules/node-llama-cpp/llama');
export const BUNDLE = join(NODE_LLAMA_CPP_LLAMA_DIR, 'gitRelease.bundle');

export interface LlamaServerBinary {
  path: string;
  /** llama.cpp commit of the bundle (null for a $HEARTH_LLAMA_SERVER binary). */
  commit: string | null;
  /** node-llama-cpp's llama.cpp release tag (llama.cpp.info.json). */
  tag: string | null;
  /** `llama-server --version` output, first lines. */
  version: string;
  source: 'env' | 'cache' | 'built';
  cmakeOptions: string[];
}

export function llamaServerCacheRoot(): string {
  const env = process.env['HEARTH_LLAMA_SERVER_CACHE'];
  if (env) return env;
  const xdg = process.env['XDG_CACHE_HOME'];
  return join(xdg ? xdg : join(homedir(), '.cache'), 'hearth', 'llama-server');
}

export function bundleInfo(): { commit: string; tag: string | null } {
  if (!existsSync(BUNDLE)) throw new Error(`node-llama-cpp's llama.cpp source bundle is missing: ${BUNDLE}`);
  const r = spawnSync('git', ['bundle', 'list-heads', BUNDLE], { encoding: 'utf8' });
  if (r.status !== 0) throw new Error(`git bundle list-heads failed: ${r.stderr || r.error?.message}`);
  const commit = /^([0-9a-f]{40})\s/m.exec(r.stdout)?.[1];
  if (!commit) throw new Error(`no head in ${BUNDLE}: ${r.stdout}`);
  let tag: string | null = null;
  try {
    tag =
      (JSON.parse(readFileSync(join(NODE_LLAMA_CPP_LLAMA_DIR, 'llama.cpp.info.json'), 'utf8')) as { tag?: string })
        .tag ?? null;
  } catch {
    /* optional */
  }
  return { commit, tag };
}

/** Wanted cmake options; those the source tree does not declare are dropped (checked after clone). */
const BASE_CMAKE_OPTIONS: Record<string, string> = {
  CMAKE_BUILD_TYPE: 'Release',
  BUILD_SHARED_LIBS: 'OFF',
  GGML_NATIVE: 'ON',
  // node-llama-cpp's prebuilt CPU backends are built without OpenMP (ggml's own thread pool); match it.
  GGML_OPENMP: 'OFF',
  LLAMA_CURL: 'OFF',
  LLAMA_OPENSSL: 'OFF',
  LLAMA_BUILD_TESTS: 'OFF',
  LLAMA_BUILD_EXAMPLES: 'OFF',
  LLAMA_BUILD_TOOLS: 'ON',
  LLAMA_BUILD_SERVER: 'ON',
  LLAMA_BUILD_APP: 'OFF',
  LLAMA_BUILD_UI: 'OFF',
  LLAMA_USE_PREBUILT_UI: 'OFF',
};

function extraCmakeArgs(): string[] {
  const raw = process.env['HEARTH_LLAMA_SERVER_CMAKE_ARGS'] ?? '';
  return raw.split(/\s+/).filter((s) => s !== '');
}

function declaredOptions(srcDir: string): Set<string> {
  const names = new Set<string>(['CMAKE_BUILD_TYPE', 'BUILD_SHARED_LIBS']);
  for (const file of ['CMakeLists.txt', 'ggml/CMakeLists.txt']) {
    const p = join(srcDir, file);
    if (!existsSync(p)) continue;
    for (const m of readFileSync(p, 'utf8').matchAll(/^\s*option\s*\(\s*([A-Z0-9_]+)/gm)) names.add(m[1]!);
  }
  return names;
}

function binaryVersion(path: string): string | null {
  const r = spawnSync(path, ['--version'], { encoding: 'utf8', timeout: 30_000 });
  if (r.error || r.status !== 0) return null;
  const lines = `${r.stdout}${r.stderr}`.trim().split('\n');
  const wanted = lines.filter((l) => /^(version:|built with)/.test(l.trim()));
  return (wanted.length ? wanted : lines.slice(0, 4)).join('\n');
}

async function withLock<T>(lockPath: string, log: (s: string) => void, fn: () => Promise<T>): Promise<T> {
  mkdirSync(dirname(lockPath), { recursive: true });
  let announced = false;
  for (;;) {
    try {
      const fd = openSync(lockPath, 'wx');
      writeFileSync(fd, String(process.pid));
      closeSync(fd);
      break;
    } catch (e) {
      if ((e as NodeJS.ErrnoException).code !== 'EEXIST') throw e;
      const pid = Number(readFileSync(lockPath, 'utf8').trim());
      if (!Number.isFinite(pid) || pid <= 0 || !processAlive(pid)) {
        rmSync(lockPath, { force: true });
        continue;
      }
      if (!announced) log(`waiting for llama-server build by pid ${pid} (${lockPath})`);
      announced = true;
      await new Promise((r) => setTimeout(r, 2000));
    }
  }
  try {
    return await fn();
  } finally {
    rmSync(lockPath, { force: true });
  }
}

/**
 * A build kept in `dir`: what `cached()` finds there; else, under `<dir>.lock` (one builder at a time across
 * processes), what `cached()` finds once the lock is held (another process built it meanwhile), else
 * `build(logFile)` in the created `dir`, logging to `<dir>/build.log`.
 */
export async function cachedBuild<T>(
  dir: string,
  log: (s: string) => void,
  cached: () => T | null,
  build: (logFile: string) => Promise<T>,
): Promise<T> {
  const hit = cached();
  if (hit) return hit;
  return withLock(`${dir}.lock`, log, async () => {
    const again = cached();
    if (again) return again;
    mkdirSync(dir, { recursive: true });
    return build(join(dir, 'build.log'));
  });
}

const runningBuildSteps = new Set<ChildProcess>();

/** Kills a build step in progress (for a caller's signal handler); the next ensureLlamaServer resumes the build. */
export function killLlamaServerBuild(): void {
  for (const child of runningBuildSteps) {
    try {
      process.kill(-child.pid!, 'SIGTERM');
    } catch {
      child.kill('SIGTERM');
    }
  }
}

export function runLogged(cmd: string, args: string[], logFile: string, cwd?: string): Promise<void> {
  writeFileSync(logFile, `\n$ ${cmd} ${args.join(' ')}\n`, { flag: 'a' });
  const fd = openSync(logFile, 'a');
  return new Promise((res, rej) => {
    // Own process group, so killLlamaServerBuild() stops the compilers too, not only cmake.
    const child = spawn(cmd, args, { cwd, stdio: ['ignore', fd, fd], detached: true });
    runningBuildSteps.add(child);
    child.on('error', (e) => {
      runningBuildSteps.delete(child);
      closeSync(fd);
      rej(e);
    });
    child.on('exit', (code, signal) => {
      runningBuildSteps.delete(child);
      closeSync(fd);
      if (code === 0) res();
      else rej(new Error(`${cmd} ${args.slice(0, 3).join(' ')}... failed (${code ?? signal}); see ${logFile}`));
    });
  });
}

function hasCommand(cmd: string): boolean {
  return spawnSync(cmd, ['--version'], { stdio: 'ignore' }).status === 0;
}

/** Finds or builds llama-server (see the file comment). `log` gets progress lines. */
export async function ensureLlamaServer(
  options: { log?: (line: string) => void; jobs?: number } = {},
): Promise<LlamaServerBinary> {
  const log = options.log ?? ((s: string) => process.stderr.write(`[llama-server] ${s}\n`));
  const envPath = process.env['HEARTH_LLAMA_SERVER'];
  if (envPath) {
    const version = binaryVersion(envPath);
    if (version === null) throw new Error(`HEARTH_LLAMA_SERVER=${envPath} does not run (--version failed)`);
    return { path: envPath, commit: null, tag: null, version, source: 'env', cmakeOptions: [] };
  }
  const { commit, tag } = bundleInfo();
  const extra = extraCmakeArgs();
  const dirName =
    extra.length === 0
      ? commit
      : `${commit}-${createHash('sha256').update(extra.join(' ')).digest('hex').slice(0, 12)}`;
  const dir = join(llamaServerCacheRoot(), dirName);
  const binary = join(dir, 'llama-server');
  const optionsFile = join(dir, 'cmake-options.json');
  const cached = (): LlamaServerBinary | null => {
    if (!existsSync(binary)) return null;
    const version = binaryVersion(binary);
    if (version === null) return null;
    let cmakeOptions: string[] = [];
    try {
      cmakeOptions = JSON.parse(readFileSync(optionsFile, 'utf8')) as string[];
    } catch {
      /* older cache */
    }
    return { path: binary, commit, tag, version, source: 'cache', cmakeOptions };
  };
  return cachedBuild(dir, log, cached, async (logFile) => {
    const srcDir = join(dir, 'src');
    const buildDir = join(dir, 'build');
    log(`building llama-server ${tag ?? ''} (${commit.slice(0, 12)}) in ${dir}; log: ${logFile} (takes minutes)`);
    const started = Date.now();
    if (!existsSync(join(srcDir, 'CMakeLists.txt'))) {
      rmSync(srcDir, { recursive: true, force: true });
      await runLogged('git', ['clone', '--quiet', BUNDLE, srcDir], logFile);
      await runLogged('git', ['-C', srcDir, '-c', 'advice.detachedHead=false', 'checkout', '--quiet', commit], logFile);
    }
    const declared = declaredOptions(srcDir);
    const cmakeOptions = Object.entries(BASE_CMAKE_OPTIONS)
      .filter(([k]) => declared.has(k))
      .map(([k, v]) => `-D${k}=${v}`)
      .concat(extra);
    const generator = hasCommand('ninja') ? ['-G', 'Ninja'] : [];
    // cmake at a lower priority where `nice` exists: the build must not slow what else runs on the machine.
    const cmake = (args: string[]) =>
      hasCommand('nice')
        ? runLogged('nice', ['-n', '10', 'cmake', ...args], logFile)
        : runLogged('cmake', args, logFile);
    const jobs = String(options.jobs ?? availableParallelism());
    await cmake(['-S', srcDir, '-B', buildDir, ...generator, ...cmakeOptions]);
    await cmake(['--build', buildDir, '--config', 'Release', '--target', 'llama-server', '-j', jobs]);
    const built = [join(buildDir, 'bin/llama-server'), join(buildDir, 'bin/Release/llama-server')].find((p) =>
      existsSync(p),
    );
    if (!built) throw new Error(`build finished but no llama-server binary under ${buildDir}/bin; see ${logFile}`);
    const tmp = `${binary}.tmp-${process.pid}`;
    copyFileSync(built, tmp);
    chmodSync(tmp, 0o755);
    renameSync(tmp, binary);
    writeFileSync(optionsFile, JSON.stringify(cmakeOptions, null, 2));
    log(`built in ${((Date.now() - started) / 1000).toFixed(0)} s: ${binary}`);
    const version = binaryVersion(binary);
    if (version === null) throw new Error(`built ${binary} does not run --version`);
    return { path: binary, commit, tag, version, source: 'built', cmakeOptions };
  });
}

export function llamaServerHelp(binary: string, env?: NodeJS.ProcessEnv): string {
  const r = spawnSync(binary, ['--help'], {
    encoding: 'utf8',
    timeout: 30_000,
    maxBuffer: 16 << 20,
    ...(env ? { env } : {}),
  });
  return `${r.stdout}${r.stderr}`;
}

export async function freePort(): Promise<number> {
  return new Promise((res, rej) => {
    const srv = createServer();
    srv.on('error', rej);
    srv.listen(0, '127.0.0.1', () => {
      const port = (srv.address() as { port: number }).port;
      srv.close(() => res(port));
    });
  });
}

export interface LlamaServerOptions {
  binary: string;
  model: string;
  slots: number;
  threads: number;
  /** Context per slot; llama-server gets -c slots*contextPerSlot (it splits -c across slots). */
  contextPerSlot: number;
  /** Batch threads (-tb); defaults to threads. */
  threadsBatch?: number;
  port?: number;
  extraArgs?: string[];
  /** Startup timeout (model load). */
  timeoutMs?: number;
  /**
   * When the server dies of SIGILL while starting (seen on VMs whose CPU reports AMX: ggml's AMX Q8_0
   * kernel faults in a GGML_NATIVE build, while node-llama-cpp's prebuilt runs it), start it once more
   * with --no-repack (no extra weight buffer types: neither AMX nor CPU repack) and say so in `notes`.
   * Default true.
   */
  retryWithoutRepackOnSigill?: boolean;
  /** The server's environment (default: this process's), e.g. LD_LIBRARY_PATH at a build's own libraries. */
  env?: NodeJS.ProcessEnv;
}

export interface LlamaServerProcess {
  /** Deviations from the requested setup (e.g. the --no-repack retry). */
  notes: string[];
  baseUrl: string;
  port: number;
  pid: number;
  args: string[];
  proc: ChildProcess;
  logs(): string;
  stop(): Promise<number | null>;
}

/** Flags of this build that exist (checked against --help), so the helper works across versions. */
function supportedFlags(binary: string, env?: NodeJS.ProcessEnv): (flag: string) => boolean {
  const help = llamaServerHelp(binary, env);
  return (flag) => new RegExp(`(^|[\\s,])${flag.replace(/[-]/g, '\\-')}([\\s,=]|$)`, 'm').test(help);
}

class StartupCrash extends Error {
  constructor(
    message: string,
    readonly signal: NodeJS.Signals | null,
  ) {
    super(message);
  }
}

/** Starts llama-server on 127.0.0.1 and waits for /health 200. Stops it with SIGTERM (SIGKILL after 10 s). */
export async function startLlamaServer(o: LlamaServerOptions): Promise<LlamaServerProcess> {
  try {
    return await startOnce(o, []);
  } catch (e) {
    if (
      !(e instanceof StartupCrash) ||
      e.signal !== 'SIGILL' ||
      o.retryWithoutRepackOnSigill === false ||
      (o.extraArgs ?? []).includes('--no-repack')
    )
      throw e;
    const s = await startOnce(o, ['--no-repack']);
    s.notes.push(
      "started with --no-repack: the default start died of SIGILL in ggml's AMX kernel (extra buffer types off: no AMX, no CPU repack)",
    );
    return s;
  }
}

async function startOnce(o: LlamaServerOptions, more: string[]): Promise<LlamaServerProcess> {
  const port = o.port ?? (await freePort());
  const has = supportedFlags(o.binary, o.env);
  const args = [
    '-m',
    o.model,
    '--host',
    '127.0.0.1',
    '--port',
    String(port),
    '-np',
    String(o.slots),
    '-t',
    String(o.threads),
    '-tb',
    String(o.threadsBatch ?? o.threads),
    '-c',
    String(o.slots * o.contextPerSlot),
  ];
  if (has('--cont-batching')) args.push('--cont-batching');
  if (has('--no-webui')) args.push('--no-webui');
  else if (has('--no-ui')) args.push('--no-ui');
  // Keep the per-slot context exactly contextPerSlot (newer builds may default to a unified KV cache).
  if (has('--no-kv-unified')) args.push('--no-kv-unified');
  // No automatic context/param fitting and no model router: the bench pins everything.
  if (has('--fit')) args.push('--fit', 'off');
  if (has('--no-warmup')) {
    /* keep the default warm-up: both servers warm up at load */
  }
  args.push(...(o.extraArgs ?? []), ...more);
  const proc = spawn(o.binary, args, { stdio: ['ignore', 'pipe', 'pipe'], ...(o.env ? { env: o.env } : {}) });
  let output = '';
  const append = (d: Buffer) => {
    output += d.toString();
    if (output.length > 1 << 20) output = output.slice(-(1 << 19));
  };
  proc.stdout!.on('data', append);
  proc.stderr!.on('data', append);
  let deathSignal: NodeJS.Signals | null = null;
  const exited = new Promise<number | null>((res) =>
    proc.on('exit', (code, signal) => {
      deathSignal = signal;
      res(code);
    }),
  );
  let dead = false;
  void exited.then(() => {
    dead = true;
  });
  const baseUrl = `http://127.0.0.1:${port}`;
  let stopping: Promise<number | null> | null = null;
  const handle: LlamaServerProcess = {
    notes: [],
    baseUrl,
    port,
    pid: proc.pid!,
    args,
    proc,
    logs: () => output,
    stop() {
      stopping ??= (async () => {
        if (proc.exitCode === null && proc.signalCode === null) proc.kill('SIGTERM');
        const timer = setTimeout(() => proc.kill('SIGKILL'), 10_000);
        const code = await exited;
        clearTimeout(timer);
        return code;
      })();
      return stopping;
    },
  };
  const deadline = Date.now() + (o.timeoutMs ?? 120_000);
  while (Date.now() < deadline) {
    if (dead)
      throw new StartupCrash(
        `llama-server exited during startup (${deathSignal ?? `exit ${proc.exitCode}`}):\n${output.slice(-4000)}`,
        deathSignal,
      );
    const r = await fetch(`${baseUrl}/health`).catch(() => null);
    if (r?.status === 200) return handle;
    await new Promise((res) => setTimeout(res, 200));
  }
  await handle.stop();
  throw new Error(`llama-server not healthy after ${o.timeoutMs ?? 120_000} ms:\n${output.slice(-4000)}`);
}

async function main(argv: string[]): Promise<void> {
  const bin = await ensureLlamaServer();
  if (argv.includes('--help-flags')) {
    process.stdout.write(llamaServerHelp(bin.path));
    return;
  }
  process.stdout.write(`${JSON.stringify(bin, null, 2)}\n`);
}

if (process.argv[1] && resolve(process.argv[1]) === resolve(import.meta.filename)) {
  for (const sig of ['SIGINT', 'SIGTERM', 'SIGHUP'] as const) {
    process.once(sig, () => {
      killLlamaServerBuild();
      process.exit(128 + (sig === 'SIGINT' ? 2 : sig === 'SIGTERM' ? 15 : 1));
    });
  }
  main(process.argv.slice(2)).catch((e: unknown) => {
    process.stderr.write(`${e instanceof Error ? e.message : String(e)}\n`);
    process.exitCode = 1;
  });
}
