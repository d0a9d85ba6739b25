import {
  existsSync,
  mkdirSync,
  readdirSync,
  readFileSync,
  readlinkSync,
  renameSync,
  statSync,
  symlinkSync,
} from 'node:fs';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';

/**
 * Where the native addon and the prebuilt llama.cpp it links against live. Pure path logic, shared by
 * the build script (native/build.ts) and the runtime loader (native/binding.ts).
 */

export const NATIVE_DIR = dirname(fileURLToPath(import.meta.url));
export const NATIVE_SRC_DIR = join(NATIVE_DIR, 'src');
/** Gitignored: headers, objects, the addon, the build log. */
export const NATIVE_BUILD_DIR = join(NATIVE_DIR, 'build');
export const ADDON_PATH = join(NATIVE_BUILD_DIR, 'hearth_native.node');

/** Finds `node_modules/<name>` the way Node resolves packages: from `fromDir` upwards. */
export function findPackageDir(name: string, fromDir: string = NATIVE_DIR): string | null {
  let dir = fromDir;
  for (;;) {
    const candidate = join(dir, 'node_modules', name);
    if (existsSync(join(candidate, 'package.json'))) return candidate;
    const parent = dirname(dir);
    if (parent === dir) return null;
    dir = parent;
  }
}

export interface PrebuiltLlama {
  /** e.g. `linux-x64`: node-llama-cpp's name for this platform's CPU-only prebuilt binaries. */
  platform: string;
  /** Folder of libllama, libggml, libggml-base and the libggml-cpu-* backend variants. */
  binDir: string;
  /** File names inside binDir, e.g. `libllama.v0.5.0.so`. */
  libllama: string;
  libggml: string;
  libggmlBase: string;
  /** node-llama-cpp's package folder (its llama/ folder holds the llama.cpp source bundle). */
  nodeLlamaCppDir: string;
}

/** Locates node-llama-cpp's CPU prebuilt for this platform, or says why there is none. */
export function findPrebuiltLlama(): PrebuiltLlama | { reason: string } {
  if (process.platform !== 'linux' || (process.arch !== 'x64' && process.arch !== 'arm64')) {
    return {
      reason: `unsupported platform ${process.platform}-${process.arch} (the native loop supports linux-x64 and linux-arm64)`,
    };
  }
  const nodeLlamaCppDir = findPackageDir('node-llama-cpp');
  if (!nodeLlamaCppDir) return { reason: 'node-llama-cpp is not installed' };
  const platform = `${process.platform}-${process.arch}`;
  const pkg = findPackageDir(`@node-llama-cpp/${platform}`, nodeLlamaCppDir);
  if (!pkg) return { reason: `@node-llama-cpp/${platform} (node-llama-cpp's prebuilt binaries) is not installed` };
  const binDir = join(pkg, 'bins', platform);
  if (!existsSync(binDir)) return { reason: `${binDir} does not exist` };
  const files = readdirSync(binDir);
  const libllama = files.find((f) => /^libllama(\.v[\d.]+)?\.so$/.test(f));
  const libggml = files.find((f) => /^libggml(\.v[\d.]+)?\.so$/.test(f));
  const libggmlBase = files.find((f) => f === 'libggml-base.so');
  if (!libllama || !libggml || !libggmlBase)
    return { reason: `libllama / libggml / libggml-base are missing in ${binDir}` };
  if (!files.some((f) => f.startsWith('libggml-cpu'))) return { reason: `no libggml-cpu backend in ${binDir}` };
  return { platform, binDir, libllama, libggml, libggmlBase, nodeLlamaCppDir };
}

/** Names of node-llama-cpp's prebuilt CPU libraries in binDir (libggml-cpu-VARIANT.so): x64, sse42, haswell, zen4... */
export function prebuiltCpuVariants(prebuilt: PrebuiltLlama): string[] {
  return readdirSync(prebuilt.binDir)
    .flatMap((f) => /^libggml-cpu-([a-z0-9_]+)\.so$/.exec(f)?.[1] ?? [])
    .sort();
}

/** Gitignored (under build/): one folder per prebuilt CPU variant in use, holding a link to that library alone. */
export const CPU_VARIANTS_DIR = join(NATIVE_BUILD_DIR, 'cpu-variants');

/**
 * A ggml backend folder that offers only node-llama-cpp's libggml-cpu-VARIANT.so (a symbolic link to it), so
 * ggml loads that library or, when this CPU lacks its instructions (ggml scores it 0), none. Made on first use;
 * safe from parallel processes (the link is made under a temporary name, then renamed over). Or why not.
 */
export function prebuiltCpuVariantDir(variant: string): { dir: string; library: string } | { reason: string } {
  const prebuilt = findPrebuiltLlama();
  if ('reason' in prebuilt) return { reason: prebuilt.reason };
  const variants = prebuiltCpuVariants(prebuilt);
  if (!variants.includes(variant))
    return { reason: `not one of node-llama-cpp's prebuilt CPU libraries (${variants.join(', ')})` };
  const library = join(prebuilt.binDir, `libggml-cpu-${variant}.so`);
  const dir = join(CPU_VARIANTS_DIR, variant);
  const link = join(dir, `libggml-cpu-${variant}.so`);
  try {
    if (readlinkSync(link) === library) return { dir, library };
  } catch {
    // Not made yet (or not a link): made below.
  }
  mkdirSync(dir, { recursive: true });
  const temporary = `${link}.${process.pid}.${Math.random().toString(36).slice(2)}.tmp`;
  symlinkSync(library, temporary);
  renameSync(temporary, link);
  return { dir, library };
}

/** This machine's own build of ggml's CPU backend (native/cpu-kernels-build.ts), when there is one. */
export const CPU_KERNELS_DIR = join(NATIVE_BUILD_DIR, 'cpu-kernels');
/** A `libggml-cpu-*` name: ggml's loader takes it for a CPU backend variant (ggml_backend_load_best). */
export const CPU_KERNELS_LIBRARY = 'libggml-cpu-native.so';
export const CPU_KERNELS_BUILD_FILE = 'build.json';

/** The CPU a build is for: model name and the ISA flags of /proc/cpuinfo (first processor). */
export interface CpuFingerprint {
  model: string;
  flags: string;
}

/** build.json beside the library. */
export interface CpuKernelsBuild {
  /** llama.cpp commit of the sources (node-llama-cpp's bundle). */
  commit: string;
  /** size:mtime of the prebuilt libggml-base.so it binds to at run time. */
  base: string;
  cpu: CpuFingerprint;
  flags: string[];
  /** hearthKernelsStamp() of the kernels Hearth added (cpu-kernels/hearth-kernels.ts). */
  hearthKernels?: string;
  builtAt: string;
}

export function cpuFingerprint(): CpuFingerprint | null {
  try {
    const info = readFileSync('/proc/cpuinfo', 'utf8');
    const flags = /^flags\s*:\s*(.*)$/m.exec(info)?.[1]?.trim();
    if (!flags) return null;
    return { model: /^model name\s*:\s*(.*)$/m.exec(info)?.[1]?.trim() ?? 'unknown', flags };
  } catch {
    return null;
  }
}

/** Identity of a library file (size and modification time): a rebuilt or upgraded one differs. */
export function fileStamp(path: string): string {
  const s = statSync(path);
  return `${s.size}:${Math.round(s.mtimeMs)}`;
}

/** build.json of the native CPU kernels, or null when there is none (or it cannot be read). */
export function readCpuKernelsBuild(): CpuKernelsBuild | null {
  try {
    return JSON.parse(readFileSync(join(CPU_KERNELS_DIR, CPU_KERNELS_BUILD_FILE), 'utf8')) as CpuKernelsBuild;
  } catch {
    return null;
  }
}

/**
 * The native CPU kernels usable by this process: built, for this CPU, against the prebuilt libggml-base
 * installed now. Otherwise why not (never built, another CPU, node-llama-cpp upgraded since).
 */
export function nativeCpuKernels(): { dir: string; library: string; build: CpuKernelsBuild } | { reason: string } {
  const library = join(CPU_KERNELS_DIR, CPU_KERNELS_LIBRARY);
  const build = readCpuKernelsBuild();
  if (build === null) return { reason: 'not built (npm run build:native builds them where cmake is installed)' };
  if (!existsSync(library)) return { reason: `${library} is missing` };
  const cpu = cpuFingerprint();
  if (cpu === null || cpu.flags !== build.cpu?.flags)
    return { reason: `built for another CPU (${build.cpu?.model ?? 'unknown'}); run npm run build:native again` };
  const prebuilt = findPrebuiltLlama();
  if ('reason' in prebuilt) return { reason: prebuilt.reason };
  if (fileStamp(join(prebuilt.binDir, prebuilt.libggmlBase)) !== build.base)
    return { reason: 'built against another node-llama-cpp release; run npm run build:native again' };
  return { dir: CPU_KERNELS_DIR, library, build };
}

/** Where `npm run build:cuda` (native/build-cuda.sh) puts ggml's CUDA backend built for this machine's GPU. */
export const CUDA_BUILD_DIR = join(NATIVE_BUILD_DIR, 'cuda');
export const CUDA_BACKEND_LIBRARY = 'libggml-cuda.so';

/**
 * ggml CUDA backend libraries the native loop can load, best first: `explicit` (--gpu-backend) alone when given;
 * else this machine's own build (native/build/cuda/, sm_XX of its GPU), then node-llama-cpp's prebuilt CUDA
 * package (machine code for a few architectures, PTX that needs a recent driver for the rest). Existing files only.
 */
export function cudaBackendCandidates(explicit?: string): string[] {
  if (explicit) return existsSync(explicit) ? [explicit] : [];
  const out = [join(CUDA_BUILD_DIR, CUDA_BACKEND_LIBRARY)];
  const nodeLlamaCppDir = findPackageDir('node-llama-cpp');
  const platform = `${process.platform}-${process.arch}`;
  const pkg = nodeLlamaCppDir ? findPackageDir(`@node-llama-cpp/${platform}-cuda`, nodeLlamaCppDir) : null;
  if (pkg) out.push(join(pkg, 'bins', `${platform}-cuda`, CUDA_BACKEND_LIBRARY));
  return out.filter((f) => existsSync(f));
}
