import { existsSync, readdirSync } from 'node:fs';
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
    return { reason: `unsupported platform ${process.platform}-${process.arch} (the native loop supports linux-x64 and linux-arm64)` };
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
  if (!libllama || !libggml || !libggmlBase) return { reason: `libllama / libggml / libggml-base are missing in ${binDir}` };
  if (!files.some((f) => f.startsWith('libggml-cpu'))) return { reason: `no libggml-cpu backend in ${binDir}` };
  return { platform, binDir, libllama, libggml, libggmlBase, nodeLlamaCppDir };
}
