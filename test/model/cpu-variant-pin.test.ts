import { spawnSync } from 'node:child_process';
import path from 'node:path';
import { describe, expect, it } from 'vitest';
import { nativeAddonAvailable } from '../../src/worker/native-slot-engine.ts';

/**
 * `--cpu-kernels prebuilt:VARIANT` as npm run test:cpu-variants uses it: in a fresh process (the CPU backend is
 * process-wide), loading a variant loads that library and no other, whatever this CPU could run faster; an unknown
 * variant names the installed ones. Through test/cpu-variants/probe-cpu-kernels.ts, the runner's own probe.
 */
const PROBE = path.resolve(import.meta.dirname, '../cpu-variants/probe-cpu-kernels.ts');
const addon = nativeAddonAvailable();
const skip = !addon.ok
  ? addon.reason
  : process.platform === 'linux' && process.arch === 'x64'
    ? ''
    : 'the variants named here are linux-x64 ones';

function probe(kernels: string): { library?: string; reason?: string } {
  const r = spawnSync(process.execPath, ['--import', 'tsx', PROBE, kernels], { encoding: 'utf8', timeout: 60_000 });
  expect(r.status, r.stderr).toBe(0);
  return JSON.parse(r.stdout.trim().split('\n').at(-1)!) as { library?: string; reason?: string };
}

describe.skipIf(skip !== '')(`pinning a prebuilt CPU variant${skip ? ` (skipped: ${skip})` : ''}`, () => {
  it('loads the generic x86-64 library, which every x86-64 CPU executes, and not the best one for this CPU', () => {
    expect(probe('prebuilt:x64')).toEqual({ library: 'libggml-cpu-x64.so' });
    expect(probe('prebuilt').library).toMatch(/^libggml-cpu-[a-z0-9_]+\.so$/);
  });

  it('an unknown variant is refused, naming the installed ones', () => {
    const { reason } = probe('prebuilt:pentium');
    expect(reason).toContain("pentium is not one of node-llama-cpp's prebuilt CPU libraries");
    expect(reason).toContain('x64');
  });
});
