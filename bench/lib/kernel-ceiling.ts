/**
 * The kernel ceiling for `npm run bench:engine`: llama.cpp's own `llama-batched-bench` (decode only, no
 * HTTP, no sampling) on the very libraries Hearth loads, plus `llama-quantize` for the Q4_K_M models.
 *
 * Build (once, seconds, cached in <cache>/<commit>-prebuilt/, <cache> as bench/llama-server.ts): the two
 * tools' sources (tools/batched-bench, tools/quantize) and headers out of node-llama-cpp's
 * llama/gitRelease.bundle, compiled and linked against node-llama-cpp's own prebuilt libllama,
 * libllama-common, libggml and libggml-base (rpath to that folder); nothing of llama.cpp is rebuilt.
 * Run: GGML_BACKEND_PATH names the prebuilt libggml-cpu-<variant>.so Hearth's process maps (found by
 * the caller, e.g. from Hearth's "model ready" log), so the CPU kernels are that exact file; the
 * working directory and the binary's folder hold no other backend. This is a stricter match than the
 * LD_LIBRARY_PATH swap of the CPU library into a llama.cpp build of its own: libllama is the same file too.
 */
import { spawnSync } from 'node:child_process';
import { existsSync, readdirSync, renameSync } from 'node:fs';
import { join } from 'node:path';
import { findPrebuiltLlama } from '../../native/paths.ts';
import { BUNDLE, bundleInfo, cachedBuild, llamaServerCacheRoot, runLogged } from '../llama-server.ts';

export interface CeilingTools {
  dir: string;
  batchedBench: string;
  quantize: string;
  /** node-llama-cpp's prebuilt library folder the tools link against. */
  libDir: string;
  commit: string;
}

const TOOLS = [
  { name: 'llama-batched-bench', sources: ['tools/batched-bench/batched-bench.cpp', 'tools/batched-bench/main.cpp'] },
  { name: 'llama-quantize', sources: ['tools/quantize/quantize.cpp', 'tools/quantize/main.cpp'] },
] as const;

/** Finds or builds llama-batched-bench and llama-quantize against the prebuilt libraries; see the file comment. */
export async function ensureCeilingTools(log: (s: string) => void): Promise<CeilingTools> {
  const pre = findPrebuiltLlama();
  if ('reason' in pre) throw new Error(pre.reason);
  const common = readdirSync(pre.binDir).find((f) => /^libllama-common(\.v[\d.]+)?\.so$/.test(f));
  if (!common) throw new Error(`node-llama-cpp ships no libllama-common in ${pre.binDir}`);
  const { commit } = bundleInfo();
  const dir = join(llamaServerCacheRoot(), `${commit}-prebuilt`);
  const result = (): CeilingTools | null => {
    const [bb, q] = TOOLS.map((t) => join(dir, t.name));
    return existsSync(bb!) && existsSync(q!)
      ? { dir, batchedBench: bb!, quantize: q!, libDir: pre.binDir, commit }
      : null;
  };
  return cachedBuild(dir, log, result, async (logFile) => {
    const src = join(dir, 'src');
    log(`building llama-batched-bench and llama-quantize against ${pre.binDir}; log: ${logFile}`);
    if (!existsSync(join(src, 'include/llama.h'))) {
      await runLogged('git', ['clone', '--quiet', '--no-checkout', BUNDLE, src], logFile);
      await runLogged(
        'git',
        [
          '-C',
          src,
          'checkout',
          '--quiet',
          commit,
          '--',
          'include',
          'common',
          'ggml/include',
          'vendor',
          'tools/batched-bench',
          'tools/quantize',
        ],
        logFile,
      );
    }
    for (const t of TOOLS) {
      const tmp = join(dir, `${t.name}.tmp-${process.pid}`);
      await runLogged(
        'nice',
        [
          '-n',
          '10',
          'c++',
          '-std=c++17',
          '-O2',
          '-DLLAMA_SHARED',
          '-DGGML_SHARED',
          `-I${join(src, 'include')}`,
          `-I${join(src, 'common')}`,
          `-I${join(src, 'ggml/include')}`,
          `-I${join(src, 'vendor')}`,
          ...t.sources.map((f) => join(src, f)),
          '-o',
          tmp,
          `-L${pre.binDir}`,
          `-l:${common}`,
          `-l:${pre.libllama}`,
          `-l:${pre.libggml}`,
          `-l:${pre.libggmlBase}`,
          `-Wl,-rpath,${pre.binDir}`,
          '-pthread',
        ],
        logFile,
      );
      renameSync(tmp, join(dir, t.name));
    }
    const built = result();
    if (!built) throw new Error(`build finished without the tools in ${dir}; see ${logFile}`);
    return built;
  });
}

/**
 * The environment that makes the tools use `variantFile`: a prebuilt library of node-llama-cpp (e.g.
 * libggml-cpu-zen4.so), or an absolute path (the native build, native/build/cpu-kernels/libggml-cpu-native.so).
 */
export function variantEnv(tools: CeilingTools, variantFile: string): NodeJS.ProcessEnv {
  const path = variantFile.startsWith('/') ? variantFile : join(tools.libDir, variantFile);
  if (!existsSync(path))
    throw new Error(`${variantFile} is not among node-llama-cpp's prebuilt libraries in ${tools.libDir}, nor a file`);
  // The tools' rpath names the folder they were built against, which may have moved (another checkout):
  // the library path makes them load this checkout's prebuilt libraries.
  return {
    ...process.env,
    GGML_BACKEND_PATH: path,
    LD_LIBRARY_PATH: [tools.libDir, process.env['LD_LIBRARY_PATH']].filter(Boolean).join(':'),
  };
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
  /**
   * The same work as a server's requests, prompts included: generated tokens of all sequences over the
   * whole time (prefill + generation). What a server running these requests could deliver at best.
   */
  requestTokPerS: number;
}

/**
 * Runs llama-batched-bench: `sequences` independent sequences, `promptTokens` prompt each, then
 * `genTokens` decode steps of one token per sequence; per-sequence KV streams (as Hearth's slots).
 */
export function runBatchedBench(
  tools: CeilingTools,
  variantFile: string,
  model: string,
  o: {
    threads: number;
    promptTokens: number;
    genTokens: number;
    sequences: number[];
    batchSize: number;
    timeoutMs?: number;
  },
): { rows: CeilingRow[]; raw: string; args: string[] } {
  const maxSeq = Math.max(...o.sequences);
  const args = [
    '-m',
    model,
    '-c',
    String(maxSeq * (o.promptTokens + o.genTokens + 8)),
    '-b',
    String(Math.max(o.batchSize, maxSeq)),
    '-ub',
    String(Math.min(512, Math.max(o.batchSize, maxSeq))),
    '-npp',
    String(o.promptTokens),
    '-ntg',
    String(o.genTokens),
    '-npl',
    o.sequences.join(','),
    '-t',
    String(o.threads),
    '-tb',
    String(o.threads),
  ];
  const r = spawnSync(tools.batchedBench, args, {
    cwd: tools.dir,
    env: variantEnv(tools, variantFile),
    encoding: 'utf8',
    timeout: o.timeoutMs ?? 600_000,
    maxBuffer: 16 << 20,
  });
  const raw = `${r.stdout ?? ''}\n${r.stderr ?? ''}`;
  if (r.status !== 0) throw new Error(`llama-batched-bench failed (${r.status ?? r.signal}): ${raw.slice(-1500)}`);
  return { rows: parseBatchedBench(raw), raw, args };
}

/** The result rows of llama-batched-bench's table (throws when there are none). */
export function parseBatchedBench(raw: string): CeilingRow[] {
  const rows: CeilingRow[] = [];
  // |    PP |     TG |    B |   N_KV |   T_PP s | S_PP t/s |   T_TG s | S_TG t/s |      T s |    S t/s |
  for (const m of raw.matchAll(
    /^\|\s*(\d+)\s*\|\s*(\d+)\s*\|\s*(\d+)\s*\|\s*\d+\s*\|\s*([\d.]+)\s*\|\s*([\d.]+)\s*\|\s*([\d.]+)\s*\|\s*([\d.]+)\s*\|\s*([\d.]+)\s*\|/gm,
  )) {
    const tgS = Number(m[6]);
    const gen = Number(m[2]);
    const sequences = Number(m[3]);
    const totalS = Number(m[8]);
    rows.push({
      promptTokens: Number(m[1]),
      genTokens: gen,
      sequences,
      ppTokPerS: Number(m[5]),
      tgTokPerS: Number(m[7]),
      tgStepMs: gen > 0 ? (tgS / gen) * 1000 : Number.NaN,
      requestTokPerS: totalS > 0 ? (gen * sequences) / totalS : Number.NaN,
    });
  }
  if (rows.length === 0) throw new Error(`no result rows in llama-batched-bench output: ${raw.slice(-1500)}`);
  return rows;
}

/** Writes `out` as `type` (e.g. Q4_K_M) from `input` with llama-quantize (requantizing a Q8_0 input). */
export function quantizeModel(
  tools: CeilingTools,
  variantFile: string,
  input: string,
  out: string,
  type: string,
  threads: number,
): void {
  if (existsSync(out)) return;
  const tmp = `${out}.tmp-${process.pid}`;
  const r = spawnSync(tools.quantize, ['--allow-requantize', input, tmp, type, String(threads)], {
    cwd: tools.dir,
    env: variantEnv(tools, variantFile),
    encoding: 'utf8',
    maxBuffer: 64 << 20,
  });
  if (r.status !== 0)
    throw new Error(`llama-quantize failed (${r.status ?? r.signal}): ${`${r.stdout}${r.stderr}`.slice(-1500)}`);
  renameSync(tmp, out);
}

/**
 * The ggml CPU backend library Hearth's native loop loads on this machine (e.g. libggml-cpu-zen4.so):
 * loads the addon with the project's tiny model in a child process and asks it. Throws when the addon
 * is not built.
 */
export function probeCpuBackend(root: string): string {
  const code = `import { ensureTinyModel } from './models/test-model-path.ts';
import { loadNativeSlotEngineInternal } from './src/worker/native-slot-engine.ts';
const e = await loadNativeSlotEngineInternal({ modelPath: await ensureTinyModel(), contextSize: 64, slots: 1, threads: 1 });
process.stdout.write('CPU_BACKEND=' + e.loaded.cpuBackend + '\\n');
await e.dispose();`;
  const r = spawnSync(process.execPath, ['--import', 'tsx', '--input-type=module', '-e', code], {
    cwd: root,
    encoding: 'utf8',
    timeout: 120_000,
  });
  const m = /CPU_BACKEND=(\S+)/.exec(r.stdout ?? '');
  if (!m) throw new Error(`could not load the native addon to learn its CPU backend: ${(r.stderr ?? '').slice(-800)}`);
  return m[1]!;
}
