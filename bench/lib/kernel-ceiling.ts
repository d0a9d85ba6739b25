/**
 * The kernel ceiling for `npm run bench:engine`: llama.cpp's own `llama-batched-bench` (decode only, no
 * HTTP, no sampling) running on the very ggml CPU library Hearth loads.
 *
 * Build (once, cached beside llama-server's: <cache>/<commit>-shared/): `git clone` of node-llama-cpp's
 * llama/gitRelease.bundle, cmake with shared libraries (BUILD_SHARED_LIBS=ON, GGML_BACKEND_DL=OFF,
 * GGML_OPENMP=OFF), targets llama-batched-bench and llama-quantize, under `nice -n 10`.
 * Run: LD_LIBRARY_PATH at a folder holding node-llama-cpp's prebuilt libggml-cpu-<variant>.so copied as
 * libggml-cpu.so.0 and its libggml-base.so (as .so and .so.0), so the compute kernels are the prebuilt
 * variant Hearth's process maps, not the ones this build compiled. The folder is checked after the run:
 * the process's own maps are not visible, so the binary is run under `ldd`-style resolution first
 * (LD_TRACE_LOADED_OBJECTS) and the resolved paths are reported.
 */
import { spawnSync } from 'node:child_process';
import { copyFileSync, existsSync, mkdirSync, readdirSync, writeFileSync } from 'node:fs';
import { availableParallelism } from 'node:os';
import { join } from 'node:path';
import { findPrebuiltLlama } from '../../native/paths.ts';
import { BUNDLE, bundleInfo, declaredOptions, hasCommand, llamaServerCacheRoot, runLogged, withLock } from '../llama-server.ts';

export interface CeilingTools {
  dir: string;
  batchedBench: string;
  quantize: string | null;
  commit: string;
}

const CMAKE: Record<string, string> = {
  CMAKE_BUILD_TYPE: 'Release',
  BUILD_SHARED_LIBS: 'ON',
  GGML_BACKEND_DL: 'OFF',
  GGML_NATIVE: 'OFF',
  GGML_OPENMP: 'OFF',
  LLAMA_CURL: 'OFF',
  LLAMA_OPENSSL: 'OFF',
  LLAMA_BUILD_TESTS: 'OFF',
  LLAMA_BUILD_EXAMPLES: 'OFF',
  LLAMA_BUILD_TOOLS: 'ON',
  LLAMA_BUILD_SERVER: 'OFF',
  LLAMA_BUILD_APP: 'OFF',
  LLAMA_BUILD_UI: 'OFF',
  LLAMA_USE_PREBUILT_UI: 'OFF',
};

function found(buildDir: string, name: string): string | null {
  return [join(buildDir, 'bin', name), join(buildDir, 'bin/Release', name)].find((p) => existsSync(p)) ?? null;
}

/** Finds or builds llama-batched-bench (+ llama-quantize) from the bundle; see the file comment. */
export async function ensureCeilingTools(log: (s: string) => void): Promise<CeilingTools> {
  const { commit } = bundleInfo();
  const dir = join(llamaServerCacheRoot(), `${commit}-shared`);
  const buildDir = join(dir, 'build');
  const have = (): CeilingTools | null => {
    const bb = found(buildDir, 'llama-batched-bench');
    return bb ? { dir, batchedBench: bb, quantize: found(buildDir, 'llama-quantize'), commit } : null;
  };
  const hit = have();
  if (hit) return hit;
  return withLock(`${dir}.lock`, log, async () => {
    const again = have();
    if (again) return again;
    mkdirSync(dir, { recursive: true });
    const logFile = join(dir, 'build.log');
    const srcDir = join(dir, 'src');
    log(`building llama-batched-bench + llama-quantize (shared libraries) in ${dir}; log: ${logFile} (takes minutes)`);
    const started = Date.now();
    if (!existsSync(join(srcDir, 'CMakeLists.txt'))) {
      await runLogged('git', ['clone', '--quiet', BUNDLE, srcDir], logFile);
      await runLogged('git', ['-C', srcDir, '-c', 'advice.detachedHead=false', 'checkout', '--quiet', commit], logFile);
    }
    const declared = declaredOptions(srcDir);
    const opts = Object.entries(CMAKE).filter(([k]) => declared.has(k)).map(([k, v]) => `-D${k}=${v}`);
    const generator = hasCommand('ninja') ? ['-G', 'Ninja'] : [];
    const nice = ['nice', '-n', '10'];
    await runLogged(nice[0]!, [...nice.slice(1), 'cmake', '-S', srcDir, '-B', buildDir, ...generator, ...opts], logFile);
    await runLogged(nice[0]!, [...nice.slice(1), 'cmake', '--build', buildDir, '--config', 'Release', '--target', 'llama-batched-bench', 'llama-quantize', '-j', String(availableParallelism())], logFile);
    const built = have();
    if (!built) throw new Error(`build finished but no llama-batched-bench under ${buildDir}/bin; see ${logFile}`);
    log(`built in ${((Date.now() - started) / 1000).toFixed(0)} s`);
    return built;
  });
}

/**
 * A folder for LD_LIBRARY_PATH that makes the shared build use node-llama-cpp's prebuilt `variantFile`
 * (e.g. libggml-cpu-zen4.so) and libggml-base.so.
 */
export function prebuiltVariantLibDir(tools: CeilingTools, variantFile: string): string {
  const pre = findPrebuiltLlama();
  if ('reason' in pre) throw new Error(pre.reason);
  const src = join(pre.binDir, variantFile);
  if (!existsSync(src)) throw new Error(`${variantFile} is not among node-llama-cpp's prebuilt libraries (${readdirSync(pre.binDir).filter((f) => f.startsWith('libggml-cpu')).join(', ')})`);
  const dir = join(tools.dir, `prebuilt-${variantFile.replace(/\.so$/, '')}`);
  mkdirSync(dir, { recursive: true });
  copyFileSync(src, join(dir, 'libggml-cpu.so.0'));
  copyFileSync(src, join(dir, 'libggml-cpu.so'));
  copyFileSync(join(pre.binDir, pre.libggmlBase), join(dir, 'libggml-base.so'));
  copyFileSync(join(pre.binDir, pre.libggmlBase), join(dir, 'libggml-base.so.0'));
  writeFileSync(join(dir, 'SOURCE'), `${pre.binDir}\n${variantFile}\n`);
  return dir;
}

/** The libraries the dynamic loader resolves for `binary` with this LD_LIBRARY_PATH (ldd's view). */
export function resolvedLibraries(binary: string, libDir: string): Record<string, string> {
  const r = spawnSync(binary, [], { env: { ...process.env, LD_LIBRARY_PATH: libDir, LD_TRACE_LOADED_OBJECTS: '1' }, encoding: 'utf8' });
  const out: Record<string, string> = {};
  for (const m of (r.stdout ?? '').matchAll(/^\s*(lib(?:ggml|llama)[^\s]*)\s+=>\s+(\S+)/gm)) out[m[1]!] = m[2]!;
  return out;
}

export interface CeilingRow {
  promptTokens: number;
  genTokens: number;
  sequences: number;
  /** Prompt processing, tokens/s over all sequences. */
  ppTokPerS: number;
  /** Generation, tokens/s over all sequences. */
  tgTokPerS: number;
  /** Seconds per generation step (one token for every sequence). */
  tgStepMs: number;
}

/**
 * Runs llama-batched-bench: `sequences` independent sequences, `promptTokens` prompt each, then
 * `genTokens` decode steps of one token per sequence; per-sequence KV streams (as Hearth's slots).
 */
export function runBatchedBench(tools: CeilingTools, libDir: string, model: string, o: { threads: number; promptTokens: number; genTokens: number; sequences: number[]; batchSize: number; timeoutMs?: number }): { rows: CeilingRow[]; raw: string; args: string[] } {
  const maxSeq = Math.max(...o.sequences);
  const args = ['-m', model, '-c', String(maxSeq * (o.promptTokens + o.genTokens + 8)), '-b', String(Math.max(o.batchSize, maxSeq)), '-ub', String(Math.min(512, Math.max(o.batchSize, maxSeq))),
    '-npp', String(o.promptTokens), '-ntg', String(o.genTokens), '-npl', o.sequences.join(','), '-t', String(o.threads), '-tb', String(o.threads), '--no-warmup'];
  const r = spawnSync(tools.batchedBench, args, { env: { ...process.env, LD_LIBRARY_PATH: libDir }, encoding: 'utf8', timeout: o.timeoutMs ?? 600_000, maxBuffer: 16 << 20 });
  const raw = `${r.stdout ?? ''}\n${r.stderr ?? ''}`;
  if (r.status !== 0) throw new Error(`llama-batched-bench failed (${r.status ?? r.signal}): ${raw.slice(-1500)}`);
  const rows: CeilingRow[] = [];
  // |    PP |     TG |    B |   N_KV |   T_PP s | S_PP t/s |   T_TG s | S_TG t/s |      T s |    S t/s |
  for (const m of raw.matchAll(/^\|\s*(\d+)\s*\|\s*(\d+)\s*\|\s*(\d+)\s*\|\s*\d+\s*\|\s*([\d.]+)\s*\|\s*([\d.]+)\s*\|\s*([\d.]+)\s*\|\s*([\d.]+)\s*\|/gm)) {
    const tgS = Number(m[6]);
    const gen = Number(m[2]);
    rows.push({ promptTokens: Number(m[1]), genTokens: gen, sequences: Number(m[3]), ppTokPerS: Number(m[5]), tgTokPerS: Number(m[7]), tgStepMs: gen > 0 ? (tgS / gen) * 1000 : Number.NaN });
  }
  if (rows.length === 0) throw new Error(`no result rows in llama-batched-bench output: ${raw.slice(-1500)}`);
  return { rows, raw, args };
}
