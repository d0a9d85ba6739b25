import { nativeCpuKernels, prebuiltCpuVariantDir } from '../../native/paths.ts';
import type { CpuKernelsKind } from '../engine/worker-protocol.ts';

/**
 * The ggml backend folder the native loop loads for a kind of CPU kernels: undefined for node-llama-cpp's
 * prebuilt folder; a folder of that one library for `prebuilt:VARIANT`; native/build/cpu-kernels for this
 * machine's build. Throws, with the reason, when the variant is not installed or the native build is not usable
 * here (never built, built for another CPU or another node-llama-cpp).
 */
export function cpuKernelsDir(kernels: CpuKernelsKind): string | undefined {
  if (kernels === 'prebuilt') return undefined;
  if (kernels.startsWith('prebuilt:')) {
    const variant = kernels.slice('prebuilt:'.length);
    const pinned = prebuiltCpuVariantDir(variant);
    if ('reason' in pinned) throw new Error(`--cpu-kernels ${kernels}: ${variant} is ${pinned.reason}`);
    return pinned.dir;
  }
  const native = nativeCpuKernels();
  if ('reason' in native) throw new Error(`the native CPU kernels are ${native.reason}`);
  return native.dir;
}
