/**
 * `npm run test:cpu-variants` (part of `npm test`): the numeric test files (NUMERIC_TEST_FILES) once per CPU build
 * of ggml this machine can execute, so a tolerance only one CPU's kernels meet fails here first. The plain
 * `vitest run` already ran them with ggml's own pick for this CPU; this adds node-llama-cpp's generic x64 library,
 * its AVX2 one (haswell), its AVX-512 one (skylakex) and this machine's own build (`native`, npm run build:native),
 * each through HEARTH_TEST_CPU_KERNELS (vitest.config.ts; test/setup/pin-cpu-kernels.ts). A variant this CPU
 * cannot execute (ggml scores it 0), or a build that is not there, is skipped with a line that says so; without the
 * native addon nothing runs (a failure under CI, where the addon must exist). Exit status: that of the runs.
 */
import { spawnSync } from 'node:child_process';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { NUMERIC_TEST_FILES } from './numeric-test-files.ts';

interface Variant {
  kernels: string;
  what: string;
}

const VARIANTS: Variant[] = [
  { kernels: 'prebuilt:x64', what: "node-llama-cpp's generic x86-64 library (SSE2 only)" },
  { kernels: 'prebuilt:haswell', what: "node-llama-cpp's AVX2 library" },
  { kernels: 'prebuilt:skylakex', what: "node-llama-cpp's AVX-512 library" },
  { kernels: 'native', what: "ggml's CPU backend built for this CPU (npm run build:native)" },
];

const ROOT = fileURLToPath(new URL('../..', import.meta.url));
const PROBE = fileURLToPath(new URL('probe-cpu-kernels.ts', import.meta.url));
const log = (line: string) => process.stdout.write(`cpu-variants: ${line}\n`);

/** Loads the kernels in a child process (the CPU backend is process-wide): the library's name, or why not. */
function probe(kernels: string): { library: string } | { reason: string } {
  const r = spawnSync(process.execPath, ['--import', 'tsx', PROBE, kernels], {
    cwd: ROOT,
    encoding: 'utf8',
    timeout: 60_000,
  });
  const line = r.stdout.trim().split('\n').at(-1) ?? '';
  try {
    return JSON.parse(line) as { library: string } | { reason: string };
  } catch {
    return {
      reason: `the probe failed (status ${r.status}): ${(r.stderr || r.stdout).trim().split('\n').slice(-3).join(' | ')}`,
    };
  }
}

const only = process.argv.slice(2);
const variants = only.length > 0 ? VARIANTS.filter((v) => only.includes(v.kernels)) : VARIANTS;
if (variants.length === 0) {
  log(`no variant named ${only.join(', ')} (known: ${VARIANTS.map((v) => v.kernels).join(', ')})`);
  process.exit(2);
}

const started = performance.now();
const results: string[] = [];
let failed = false;
for (const v of variants) {
  const p = probe(v.kernels);
  if ('reason' in p) {
    if (p.reason.startsWith('addon:') && process.env.CI) {
      log(`FAILED: ${v.kernels}: ${p.reason} (the native addon must exist in CI)`);
      failed = true;
      results.push(`${v.kernels}: failed (no addon)`);
      continue;
    }
    log(`SKIPPED ${v.kernels} (${v.what}): ${p.reason}`);
    results.push(`${v.kernels}: skipped`);
    continue;
  }
  log(`${v.kernels}: ${p.library} (${v.what}): ${NUMERIC_TEST_FILES.length} files`);
  const t0 = performance.now();
  const r = spawnSync(
    process.execPath,
    [join(ROOT, 'node_modules', 'vitest', 'vitest.mjs'), 'run', ...NUMERIC_TEST_FILES],
    {
      cwd: ROOT,
      stdio: 'inherit',
      env: { ...process.env, HEARTH_TEST_CPU_KERNELS: v.kernels },
    },
  );
  const seconds = ((performance.now() - t0) / 1000).toFixed(0);
  if (r.status !== 0) failed = true;
  results.push(
    `${v.kernels} (${p.library}): ${r.status === 0 ? 'passed' : `FAILED (status ${r.status ?? r.signal})`} in ${seconds} s`,
  );
}
for (const line of results) log(line);
log(`${failed ? 'FAILED' : 'done'} in ${((performance.now() - started) / 1000).toFixed(0)} s`);
process.exit(failed ? 1 : 0);
