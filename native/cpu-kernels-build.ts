import { spawn, spawnSync } from 'node:child_process';
import { existsSync, mkdirSync, renameSync, rmSync, writeFileSync } from 'node:fs';
import { availableParallelism } from 'node:os';
import { join } from 'node:path';
import { applyHearthKernels, hearthKernelsStamp } from './cpu-kernels/hearth-kernels.ts';
import {
  CPU_KERNELS_BUILD_FILE,
  CPU_KERNELS_DIR,
  CPU_KERNELS_LIBRARY,
  cpuFingerprint,
  fileStamp,
  NATIVE_BUILD_DIR,
  readCpuKernelsBuild,
  type CpuKernelsBuild,
  type PrebuiltLlama,
} from './paths.ts';

/**
 * Builds ggml's CPU backend for this very machine: native/build/cpu-kernels/libggml-cpu-native.so.
 *
 * node-llama-cpp ships the CPU backend prebuilt per microarchitecture family (haswell, zen4, icelake...);
 * ggml picks the best family this CPU supports. A build with `-march=native` can be faster still (here,
 * an AMD EPYC without AVX-512: 0.5B Q4_K_M at 8 sequences 107-109 tok/s against 93-98 with the prebuilt
 * haswell library), or slower (the Zen 4 measured the prebuilt zen4 library ahead of a native
 * build), so Hearth never assumes: `--cpu-kernels auto` times both for the model it serves
 * (src/engine/cpu-kernels.ts).
 *
 * Source: the ggml/ tree of node-llama-cpp's own source bundle (the release its prebuilt libraries were
 * built from: build.ts checks that), configured with cmake as a dynamically loaded backend
 * (GGML_BACKEND_DL, the prebuilt layout) with an unversioned dependency on libggml-base.so, so that in a
 * process it binds to the prebuilt libggml-base node-llama-cpp's libllama has loaded. The ISA switches
 * follow /proc/cpuinfo, so ggml's own feature check (`ggml_backend_score`) refuses the library on a CPU
 * that lacks them; `build.json` records the CPU it was built for and Hearth uses it on that CPU only.
 * x86-64 Linux with cmake only; anything else leaves no library (Hearth then uses the prebuilt ones).
 * Hearth's own kernels go in before the configure (cpu-kernels/hearth-kernels.ts): on AVX-512 VNNI CPUs, a
 * Q8_0 matrix multiply twice as fast as llamafile's at 8 sequences on Zen 5.
 */

/** ggml's x86 ISA options and the /proc/cpuinfo flag each needs. */
const X86_OPTIONS: [option: string, flag: string][] = [
  ['GGML_SSE42', 'sse4_2'],
  ['GGML_AVX', 'avx'],
  ['GGML_AVX2', 'avx2'],
  ['GGML_BMI2', 'bmi2'],
  ['GGML_FMA', 'fma'],
  ['GGML_F16C', 'f16c'],
  ['GGML_AVX_VNNI', 'avx_vnni'],
  ['GGML_AVX512', 'avx512f'],
  ['GGML_AVX512_VBMI', 'avx512vbmi'],
  ['GGML_AVX512_VNNI', 'avx512_vnni'],
  ['GGML_AVX512_BF16', 'avx512_bf16'],
  ['GGML_AMX_TILE', 'amx_tile'],
  ['GGML_AMX_INT8', 'amx_int8'],
  ['GGML_AMX_BF16', 'amx_bf16'],
];

class CpuKernelsNotBuilt extends Error {}

function run(cmd: string, argv: string[], log: (s: string) => void, cwd?: string): Promise<void> {
  return new Promise((resolve, reject) => {
    log(`$ ${cmd} ${argv.join(' ')}`);
    const child = spawn(cmd, argv, { cwd, stdio: ['ignore', 'pipe', 'pipe'] });
    let tail = '';
    const take = (d: Buffer) => {
      log(d.toString());
      tail = (tail + d.toString()).slice(-2000);
    };
    child.stdout.on('data', take);
    child.stderr.on('data', take);
    child.on('error', (e) => reject(new CpuKernelsNotBuilt(`${cmd}: ${e.message}`)));
    child.on('close', (code) =>
      code === 0
        ? resolve()
        : reject(
            new CpuKernelsNotBuilt(
              `${cmd} ${argv[0]} failed (${code}): ${tail.trim().split('\n').slice(-3).join(' | ')}`,
            ),
          ),
    );
  });
}

/**
 * Builds (or keeps, when build.json says it was built for this CPU, commit and libggml-base) the native CPU
 * kernels. Throws CpuKernelsNotBuilt with the reason when this machine cannot build them.
 */
export async function buildCpuKernels(
  prebuilt: PrebuiltLlama,
  commit: string,
  log: (s: string) => void,
  force = false,
): Promise<{ built: boolean; seconds: number }> {
  const started = performance.now();
  if (process.platform !== 'linux' || process.arch !== 'x64')
    throw new CpuKernelsNotBuilt(`only built on linux-x64 (this is ${process.platform}-${process.arch})`);
  const cpu = cpuFingerprint();
  if (cpu === null) throw new CpuKernelsNotBuilt('cannot read /proc/cpuinfo');
  const base = fileStamp(join(prebuilt.binDir, prebuilt.libggmlBase));
  const kernels = hearthKernelsStamp();
  const existing = readCpuKernelsBuild();
  if (
    !force &&
    existing &&
    existing.commit === commit &&
    existing.base === base &&
    existing.hearthKernels === kernels &&
    existing.cpu?.flags === cpu.flags &&
    existsSync(join(CPU_KERNELS_DIR, CPU_KERNELS_LIBRARY))
  ) {
    return { built: false, seconds: 0 };
  }
  if (spawnSync('cmake', ['--version']).status !== 0) throw new CpuKernelsNotBuilt('cmake is not installed');

  const work = join(NATIVE_BUILD_DIR, '.cpu-kernels-work');
  rmSync(work, { recursive: true, force: true });
  mkdirSync(work, { recursive: true });
  try {
    const repo = join(work, 'bundle.git');
    const src = join(work, 'src');
    mkdirSync(src);
    await run('git', ['init', '-q', '--bare', repo], log);
    await run(
      'git',
      [
        `--git-dir=${repo}`,
        'fetch',
        '-q',
        join(prebuilt.nodeLlamaCppDir, 'llama', 'gitRelease.bundle'),
        `+${commit}:refs/heads/release`,
      ],
      log,
    );
    await run('sh', ['-c', `git --git-dir='${repo}' archive release ggml | tar -x -C '${src}'`], log);
    // The bundle leaves out ggml's pkg-config template, which a standalone configure insists on.
    writeFileSync(join(src, 'ggml', 'ggml.pc.in'), '');
    try {
      applyHearthKernels(join(src, 'ggml'));
    } catch (e) {
      throw new CpuKernelsNotBuilt(e instanceof Error ? e.message : String(e));
    }

    const have = new Set(cpu.flags.split(' '));
    const isa = X86_OPTIONS.map(([option, flag]) => `-D${option}=${have.has(flag) ? 'ON' : 'OFF'}`);
    const out = join(work, 'out');
    await run(
      'cmake',
      [
        '-S',
        join(src, 'ggml'),
        '-B',
        out,
        '-DCMAKE_BUILD_TYPE=Release',
        '-DBUILD_SHARED_LIBS=ON',
        '-DGGML_BACKEND_DL=ON',
        '-DGGML_NATIVE=OFF',
        '-DGGML_OPENMP=OFF',
        '-DGGML_BUILD_TESTS=OFF',
        '-DGGML_BUILD_EXAMPLES=OFF',
        '-DGGML_CCACHE=OFF',
        // As llama.cpp's own build (and node-llama-cpp's prebuilt): ggml alone leaves llamafile's sgemm out.
        '-DGGML_LLAMAFILE=ON',
        // NEEDED libggml-base.so (not .so.0) and no rpath: it binds to the prebuilt libggml-base in the process.
        '-DCMAKE_PLATFORM_NO_VERSIONED_SONAME=ON',
        '-DCMAKE_SKIP_RPATH=ON',
        '-DCMAKE_C_FLAGS=-march=native',
        '-DCMAKE_CXX_FLAGS=-march=native',
        ...isa,
      ],
      log,
    );
    await run(
      'cmake',
      ['--build', out, '--target', 'ggml-cpu', '--parallel', String(Math.max(1, Math.min(4, availableParallelism())))],
      log,
    );

    const staging = `${CPU_KERNELS_DIR}.partial`;
    rmSync(staging, { recursive: true, force: true });
    mkdirSync(staging, { recursive: true });
    renameSync(join(out, 'bin', 'libggml-cpu.so'), join(staging, CPU_KERNELS_LIBRARY));
    const build: CpuKernelsBuild = {
      commit,
      base,
      cpu,
      flags: ['-march=native', ...isa],
      hearthKernels: kernels,
      builtAt: new Date().toISOString(),
    };
    writeFileSync(join(staging, CPU_KERNELS_BUILD_FILE), `${JSON.stringify(build, null, 2)}\n`);
    rmSync(CPU_KERNELS_DIR, { recursive: true, force: true });
    renameSync(staging, CPU_KERNELS_DIR);
    return { built: true, seconds: (performance.now() - started) / 1000 };
  } finally {
    rmSync(work, { recursive: true, force: true });
  }
}
