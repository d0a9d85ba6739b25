/**
 * Offline build of the native slot loop: native/src/*.cpp -> native/build/hearth_native.node.
 *
 *   node --import tsx native/build.ts [--if-possible] [--force] [--verbose] [--no-cpu-kernels]
 *
 * Links against the prebuilt libllama / libggml that node-llama-cpp ships for this platform (rpath to
 * that folder, so node-llama-cpp and the addon share one copy of the library in a process); never
 * builds llama.cpp. The llama.cpp headers come once from node-llama-cpp's own source bundle
 * (node_modules/node-llama-cpp/llama/gitRelease.bundle, read with `git`) into native/build/llama-headers/,
 * after checking that the bundle and the prebuilt binaries are the same llama.cpp release. The built
 * addon is loaded once in a child process to compare the compiled-in header versions with the libraries'
 * llama_version() / ggml_version() before it replaces the previous build.
 *
 * Then, unless --no-cpu-kernels: ggml's CPU backend built for this machine (cpu-kernels-build.ts), which
 * Hearth may use instead of the prebuilt one (`--cpu-kernels`); failing to build it only prints a line.
 *
 * --if-possible (for npm postinstall): when the addon cannot be built (unsupported platform, no C++
 * compiler, no git, a compile error), print one line and exit 0; Hearth then uses node-llama-cpp.
 */
import { spawn, spawnSync } from 'node:child_process';
import { createHash } from 'node:crypto';
import { existsSync, mkdirSync, readdirSync, readFileSync, renameSync, rmSync, statSync, writeFileSync } from 'node:fs';
import { availableParallelism } from 'node:os';
import { dirname, join, relative } from 'node:path';
import { buildCpuKernels } from './cpu-kernels-build.ts';
import {
  ADDON_PATH,
  CPU_KERNELS_DIR,
  CPU_KERNELS_LIBRARY,
  findPackageDir,
  findPrebuiltLlama,
  NATIVE_BUILD_DIR,
  NATIVE_SRC_DIR,
  type PrebuiltLlama,
} from './paths.ts';

const LOG_PATH = join(NATIVE_BUILD_DIR, 'build.log');
const OBJ_DIR = join(NATIVE_BUILD_DIR, 'obj');

/** A reason the addon cannot be built here; with --if-possible it is reported and the install goes on. */
class CannotBuild extends Error {}

interface HeaderSet {
  /** Folder with include/llama.h and ggml/include/*.h. */
  dir: string;
  commit: string;
  tag: string;
  llamaVersion: string;
  ggmlVersion: string;
}

interface BuildInfo {
  headerLlamaVersion: string;
  headerGgmlVersion: string;
  headerCommit: string;
  llamaVersion: string;
  ggmlVersion: string;
  versionsMatch: boolean;
  mismatch?: string;
}

const args = new Set(process.argv.slice(2));
const ifPossible = args.has('--if-possible');
const force = args.has('--force');
const verbose = args.has('--verbose');

function log(line: string): void {
  mkdirSync(NATIVE_BUILD_DIR, { recursive: true });
  writeFileSync(LOG_PATH, line.endsWith('\n') ? line : `${line}\n`, { flag: 'a' });
  if (verbose) process.stderr.write(line.endsWith('\n') ? line : `${line}\n`);
}

function run(cmd: string, argv: string[], what: string): Buffer {
  const r = spawnSync(cmd, argv, { maxBuffer: 64 * 1024 * 1024 });
  if (r.error) throw new CannotBuild(`${what}: ${r.error.message}`);
  if (r.status !== 0) {
    log(`$ ${cmd} ${argv.join(' ')}\n${r.stderr.toString()}`);
    throw new CannotBuild(`${what} failed (see ${relative(process.cwd(), LOG_PATH)})`);
  }
  return r.stdout;
}

function readJson(path: string): unknown {
  return JSON.parse(readFileSync(path, 'utf8'));
}

/** The llama.cpp release of the source bundle must be the one the prebuilt binaries were built from. */
function checkReleaseMatch(prebuilt: PrebuiltLlama): string {
  const info = readJson(join(prebuilt.nodeLlamaCppDir, 'llama', 'llama.cpp.info.json')) as { tag?: string };
  const meta = readJson(join(prebuilt.binDir, '_nlcBuildMetadata.json')) as {
    buildOptions?: { llamaCpp?: { release?: string } };
  };
  const tag = info.tag;
  const release = meta.buildOptions?.llamaCpp?.release;
  if (!tag || !release)
    throw new CannotBuild(
      'cannot read the llama.cpp release of node-llama-cpp (llama.cpp.info.json / _nlcBuildMetadata.json)',
    );
  if (tag !== release)
    throw new CannotBuild(
      `node-llama-cpp's source bundle is llama.cpp ${tag} but its prebuilt binaries are ${release}`,
    );
  return tag;
}

function cmakeVersion(cmake: string, prefix: string): string {
  const part = (name: string) => new RegExp(`set\\(${prefix}_VERSION_${name}\\s+(\\d+)\\)`).exec(cmake)?.[1];
  const [major, minor, patch] = [part('MAJOR'), part('MINOR'), part('PATCH')];
  if (major === undefined || minor === undefined || patch === undefined)
    throw new CannotBuild(`no ${prefix}_VERSION in the bundle's CMakeLists.txt`);
  return `${major}.${minor}.${patch}`;
}

/** One-time: llama.h + ggml/include/*.h and the version numbers, out of node-llama-cpp's git bundle. */
function extractHeaders(prebuilt: PrebuiltLlama, tag: string): HeaderSet {
  const bundle = join(prebuilt.nodeLlamaCppDir, 'llama', 'gitRelease.bundle');
  if (!existsSync(bundle)) throw new CannotBuild(`${bundle} is missing`);
  const heads = run('git', ['bundle', 'list-heads', bundle], 'git bundle list-heads').toString().trim().split('\n');
  const commit = heads[0]?.split(/\s+/)[0];
  if (!commit || !/^[0-9a-f]{40}$/.test(commit)) throw new CannotBuild(`cannot read the head of ${bundle}`);
  const dir = join(NATIVE_BUILD_DIR, 'llama-headers', commit.slice(0, 12));
  const versionsPath = join(dir, 'versions.json');
  if (existsSync(versionsPath)) return { dir, ...(readJson(versionsPath) as Omit<HeaderSet, 'dir'>) };

  const repo = join(NATIVE_BUILD_DIR, '.bundle-repo');
  rmSync(repo, { recursive: true, force: true });
  try {
    run('git', ['init', '-q', '--bare', repo], 'git init');
    run('git', [`--git-dir=${repo}`, 'fetch', '-q', bundle, '+HEAD:refs/heads/release'], 'git fetch from the bundle');
    const show = (path: string) => run('git', [`--git-dir=${repo}`, 'show', `release:${path}`], `git show ${path}`);
    const files = run(
      'git',
      [`--git-dir=${repo}`, 'ls-tree', '-r', '--name-only', 'release', '--', 'include/llama.h', 'ggml/include'],
      'git ls-tree',
    )
      .toString()
      .split('\n')
      .filter((f) => f.endsWith('.h'));
    if (!files.includes('include/llama.h')) throw new CannotBuild('include/llama.h is not in the bundle');
    const staging = `${dir}.partial`;
    rmSync(staging, { recursive: true, force: true });
    for (const f of files) {
      mkdirSync(dirname(join(staging, f)), { recursive: true });
      writeFileSync(join(staging, f), show(f));
    }
    const versions = {
      commit,
      tag,
      llamaVersion: cmakeVersion(show('CMakeLists.txt').toString(), 'LLAMA'),
      ggmlVersion: cmakeVersion(show('ggml/CMakeLists.txt').toString(), 'GGML'),
    };
    writeFileSync(join(staging, 'versions.json'), `${JSON.stringify(versions, null, 2)}\n`);
    rmSync(dir, { recursive: true, force: true });
    renameSync(staging, dir);
    log(`extracted ${files.length} headers of llama.cpp ${tag} (${commit}) into ${dir}`);
    return { dir, ...versions };
  } finally {
    rmSync(repo, { recursive: true, force: true });
  }
}

function findCompiler(): string {
  const candidates = process.env.CXX ? [process.env.CXX] : ['c++', 'g++', 'clang++'];
  for (const cxx of candidates) {
    const r = spawnSync(cxx, ['--version']);
    if (!r.error && r.status === 0) return cxx;
  }
  throw new CannotBuild(`no C++ compiler found (tried ${candidates.join(', ')}; set CXX)`);
}

function compileFlags(headers: HeaderSet): string[] {
  const addonApi = findPackageDir('node-addon-api');
  const apiHeaders = findPackageDir('node-api-headers');
  if (!addonApi || !apiHeaders) throw new CannotBuild('node-addon-api / node-api-headers are not installed');
  const q = (s: string) => `"${s}"`;
  return [
    '-std=c++17',
    '-O2',
    '-fPIC',
    '-fvisibility=hidden',
    '-pthread',
    '-Wall',
    '-Wextra',
    '-Wno-unused-parameter',
    '-Wno-missing-field-initializers',
    '-DNAPI_VERSION=8',
    '-DNAPI_CPP_EXCEPTIONS',
    '-DNODE_ADDON_API_DISABLE_DEPRECATED',
    // A worker being terminated makes Node-API calls fail; without this node-addon-api aborts the process.
    '-DNODE_API_SWALLOW_UNTHROWABLE_EXCEPTIONS',
    '-DLLAMA_SHARED',
    '-DGGML_SHARED',
    `-DHEARTH_HEADER_LLAMA_VERSION=${q(headers.llamaVersion)}`,
    `-DHEARTH_HEADER_GGML_VERSION=${q(headers.ggmlVersion)}`,
    `-DHEARTH_HEADER_COMMIT=${q(headers.commit)}`,
    `-I${addonApi}`,
    `-I${join(apiHeaders, 'include')}`,
    `-I${join(headers.dir, 'include')}`,
    `-I${join(headers.dir, 'ggml', 'include')}`,
  ];
}

function spawnAsync(cmd: string, argv: string[]): Promise<{ code: number; output: string }> {
  return new Promise((resolve) => {
    const child = spawn(cmd, argv, { stdio: ['ignore', 'pipe', 'pipe'] });
    let output = '';
    child.stdout.on('data', (d: Buffer) => (output += d.toString()));
    child.stderr.on('data', (d: Buffer) => (output += d.toString()));
    child.on('error', (e) => resolve({ code: -1, output: e.message }));
    child.on('close', (code) => resolve({ code: code ?? -1, output }));
  });
}

/** Compiles every native/src/*.cpp whose inputs changed (sources, any local header, flags). */
async function compileAll(cxx: string, flags: string[]): Promise<string[]> {
  mkdirSync(OBJ_DIR, { recursive: true });
  const names = readdirSync(NATIVE_SRC_DIR);
  const headerHash = createHash('sha256');
  for (const h of names.filter((n) => n.endsWith('.h')).sort())
    headerHash.update(h).update(readFileSync(join(NATIVE_SRC_DIR, h)));
  headerHash.update(cxx).update(flags.join('\0'));
  const shared = headerHash.digest('hex');

  const jobs = names
    .filter((n) => n.endsWith('.cpp'))
    .sort()
    .map((n) => {
      const src = join(NATIVE_SRC_DIR, n);
      const obj = join(OBJ_DIR, n.replace(/\.cpp$/, '.o'));
      const stamp = createHash('sha256').update(shared).update(readFileSync(src)).digest('hex');
      return { src, obj, stamp, stampPath: `${obj}.stamp` };
    });
  const todo = jobs.filter(
    (j) => force || !existsSync(j.obj) || !existsSync(j.stampPath) || readFileSync(j.stampPath, 'utf8') !== j.stamp,
  );
  const width = Math.max(1, Math.min(2, availableParallelism()));
  let next = 0;
  const failures: string[] = [];
  const worker = async () => {
    while (next < todo.length) {
      const j = todo[next++]!;
      rmSync(j.stampPath, { force: true });
      const argv = [...flags, '-c', j.src, '-o', j.obj];
      const r = await spawnAsync(cxx, argv);
      log(`$ ${cxx} ${argv.join(' ')}${r.output ? `\n${r.output}` : ''}`);
      if (r.code !== 0) failures.push(relative(process.cwd(), j.src));
      else writeFileSync(j.stampPath, j.stamp);
    }
  };
  await Promise.all(Array.from({ length: width }, worker));
  if (failures.length > 0)
    throw new CannotBuild(`compiling ${failures.join(', ')} failed (see ${relative(process.cwd(), LOG_PATH)})`);
  return jobs.map((j) => j.obj);
}

function link(cxx: string, objects: string[], prebuilt: PrebuiltLlama, out: string): void {
  const relRpath = relative(dirname(ADDON_PATH), prebuilt.binDir);
  run(
    cxx,
    [
      '-shared',
      '-pthread',
      '-o',
      out,
      ...objects,
      `-L${prebuilt.binDir}`,
      `-l:${prebuilt.libllama}`,
      `-l:${prebuilt.libggml}`,
      `-l:${prebuilt.libggmlBase}`,
      '-ldl',
      // $ORIGIN-relative first (survives moving the checkout), the absolute folder as a fallback.
      `-Wl,-rpath,$ORIGIN/${relRpath}`,
      `-Wl,-rpath,${prebuilt.binDir}`,
    ],
    'linking hearth_native.node',
  );
}

/** Loads the fresh addon in a child process: it must load and see the library versions it was built for. */
function verify(path: string): BuildInfo {
  const code = `const m = require(${JSON.stringify(path)}); process.stdout.write(JSON.stringify(m.buildInfo()));`;
  const r = spawnSync(process.execPath, ['-e', code]);
  if (r.status !== 0) {
    log(r.stderr.toString());
    throw new CannotBuild(`the built addon does not load (see ${relative(process.cwd(), LOG_PATH)})`);
  }
  const info = JSON.parse(r.stdout.toString()) as BuildInfo;
  if (!info.versionsMatch) throw new CannotBuild(info.mismatch ?? 'header and library versions differ');
  return info;
}

async function main(): Promise<void> {
  const started = performance.now();
  mkdirSync(NATIVE_BUILD_DIR, { recursive: true });
  writeFileSync(LOG_PATH, `hearth native build ${new Date().toISOString()}\n`);
  const prebuilt = findPrebuiltLlama();
  if ('reason' in prebuilt) throw new CannotBuild(prebuilt.reason);
  const tag = checkReleaseMatch(prebuilt);
  const cxx = findCompiler();
  const headers = extractHeaders(prebuilt, tag);
  const soVersion = /\.v(\d+\.\d+\.\d+)\.so$/.exec(prebuilt.libllama)?.[1];
  if (soVersion && soVersion !== headers.llamaVersion) {
    throw new CannotBuild(
      `the headers are llama.cpp ${headers.llamaVersion} but the prebuilt library is ${prebuilt.libllama}`,
    );
  }
  const objects = await compileAll(cxx, compileFlags(headers));
  const tmp = ADDON_PATH.replace(/\.node$/, `.tmp-${process.pid}.node`);
  try {
    link(cxx, objects, prebuilt, tmp);
    const info = verify(tmp);
    renameSync(tmp, ADDON_PATH); // atomic: a process that has the old file loaded keeps its copy
    const seconds = ((performance.now() - started) / 1000).toFixed(1);
    const size = (statSync(ADDON_PATH).size / 1024).toFixed(0);
    console.log(
      `hearth native addon: built ${relative(process.cwd(), ADDON_PATH)} (${size} KiB) against llama.cpp ${info.llamaVersion} / ggml ${info.ggmlVersion} ` +
        `in ${prebuilt.binDir} (headers ${headers.tag} ${headers.commit.slice(0, 12)}) in ${seconds} s`,
    );
  } finally {
    rmSync(tmp, { force: true });
  }
  if (!args.has('--no-cpu-kernels')) await cpuKernels(prebuilt, headers.commit);
}

/** The optional native CPU kernels (cpu-kernels-build.ts): reported, never a reason for the install to fail. */
async function cpuKernels(prebuilt: PrebuiltLlama, commit: string): Promise<void> {
  try {
    const r = await buildCpuKernels(prebuilt, commit, log, force);
    const where = relative(process.cwd(), join(CPU_KERNELS_DIR, CPU_KERNELS_LIBRARY));
    console.log(
      r.built
        ? `hearth native CPU kernels: built ${where} for this CPU in ${r.seconds.toFixed(1)} s`
        : `hearth native CPU kernels: ${where} is up to date`,
    );
  } catch (err) {
    const message = err instanceof Error ? err.message : String(err);
    log(`native CPU kernels not built: ${message}`);
    console.log(`hearth native CPU kernels: not built (${message}); Hearth uses node-llama-cpp's prebuilt ones`);
  }
}

main().catch((err: unknown) => {
  const message = err instanceof Error ? err.message : String(err);
  if (ifPossible) {
    console.log(`hearth native addon: not built (${message}); Hearth will use the node-llama-cpp engine`);
    process.exit(0);
  }
  console.error(`hearth native addon: build failed: ${message}`);
  process.exit(1);
});
