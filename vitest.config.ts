import { defineConfig } from 'vitest/config';

// Model and e2e tests start real servers and model workers: on a 2-core machine they run two files at a
// time at most, and get generous time-outs (never timing assertions).
export default defineConfig({
  // examples/tool-server is its own package (it depends on the kit as `hearth`): inside this tree, `hearth/tools` is src/tools (as in tsconfig paths).
  resolve: { alias: { 'hearth/tools': new URL('./src/tools/index.ts', import.meta.url).pathname } },
  test: {
    include: ['test/**/*.test.ts'],
    pool: 'forks',
    maxWorkers: 2,
    testTimeout: 60_000,
    hookTimeout: 120_000,
    teardownTimeout: 30_000,
    // Servers the tests start (in process or as `hearth serve` children, which inherit it) load the prebuilt CPU
    // kernels: choosing by timing would add child processes to every start and could change greedy outputs
    // from one run to the next. test/model/cpu-kernels.test.ts tests the choice itself. Likewise they compute on
    // the CPU without probing for a GPU (a child process per start where a CUDA library is installed);
    // test/unit/engine/gpu-offload.test.ts and test/model/gpu-fallback.test.ts test that choice.
    // HEARTH_TEST_CPU_KERNELS picks other kernels (prebuilt:x64, native...: npm run test:cpu-variants), which
    // test/setup/pin-cpu-kernels.ts also loads into the test processes themselves.
    env: { HEARTH_CPU_KERNELS: process.env.HEARTH_TEST_CPU_KERNELS ?? 'prebuilt', HEARTH_GPU_LAYERS: '0' },
    setupFiles: ['test/setup/pin-cpu-kernels.ts'],
  },
});
