/**
 * Vitest setup file, run in each test file's process before the file: under HEARTH_TEST_CPU_KERNELS (vitest.config.ts
 * passes it on as HEARTH_CPU_KERNELS; npm run test:cpu-variants sets it to prebuilt:x64, prebuilt:haswell, native...)
 * it loads those CPU kernels into this process first, so the engines a test builds in process (native loops and
 * node-llama-cpp alike: ggml's CPU backend is process-wide, the first load wins) compute with them, as the
 * `hearth serve` children do through the variable. The default (`prebuilt`) loads nothing, and imports nothing.
 */
const kernels = process.env.HEARTH_CPU_KERNELS ?? 'prebuilt';
if (kernels !== 'prebuilt' && kernels !== 'auto') {
  const [{ loadHearthNative }, { parseCpuKernelsMode }, { cpuKernelsDir }] = await Promise.all([
    import('../../native/binding.ts'),
    import('../../src/config/config.ts'),
    import('../../src/worker/cpu-kernels-dir.ts'),
  ]);
  const mode = parseCpuKernelsMode(kernels, 'HEARTH_CPU_KERNELS');
  if (mode === 'auto') throw new Error('HEARTH_CPU_KERNELS=auto would time kernels; the tests pin one');
  const native = loadHearthNative();
  if (!native.ok) throw new Error(`HEARTH_CPU_KERNELS=${mode} needs the native addon: ${native.reason}`);
  native.binding.loadCpuBackend(cpuKernelsDir(mode));
}
