import { loadHearthNative } from '../../native/binding.ts';
import { parseCpuKernelsMode } from '../../src/config/config.ts';
import { cpuKernelsDir } from '../../src/worker/cpu-kernels-dir.ts';

/**
 * Child process of run.ts: loads the CPU kernels named by argv[2] (a --cpu-kernels value) into this process and
 * prints one JSON line: { library } (the libggml-cpu-*.so in use) or { reason } (`addon: ...` when the native addon
 * itself is missing). ggml refuses a library whose instructions this CPU lacks (its score is 0), so loading it
 * here executes none of them.
 */
const answer = (value: { library: string } | { reason: string }) => process.stdout.write(`${JSON.stringify(value)}\n`);
try {
  const native = loadHearthNative();
  if (!native.ok) {
    answer({ reason: `addon: ${native.reason}` });
  } else {
    const kernels = parseCpuKernelsMode(process.argv[2] ?? '', 'kernels');
    if (kernels === 'auto') throw new Error('auto is no set of kernels');
    const dir = cpuKernelsDir(kernels);
    try {
      answer({ library: native.binding.loadCpuBackend(dir) });
    } catch (err) {
      answer({ reason: `this CPU cannot execute it (${err instanceof Error ? err.message : String(err)})` });
    }
  }
} catch (err) {
  answer({ reason: err instanceof Error ? err.message : String(err) });
}
