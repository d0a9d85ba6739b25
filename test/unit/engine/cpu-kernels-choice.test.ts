import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import {
  chooseCpuKernels,
  type CpuKernelsMode,
  CpuKernelsUnavailable,
  type KernelProbe,
} from '../../../src/engine/cpu-kernels.ts';
import type { CpuKernelProbeAnswer, CpuKernelProbeRequest } from '../../../src/engine/worker-protocol.ts';

/**
 * `--cpu-kernels` (src/engine/cpu-kernels.ts) with a scripted probe in place of the child processes: what each
 * mode asks the probe, the order the candidates are timed in, the 3 % margin, the cache, and what a failed
 * candidate or an unusable native build leads to. test/model/cpu-kernels.test.ts runs the real probe.
 */
let dir: string;
let modelPath: string;
beforeEach(() => {
  dir = fs.mkdtempSync(path.join(os.tmpdir(), 'hearth-kernels-'));
  modelPath = path.join(dir, 'model.gguf');
  fs.writeFileSync(modelPath, 'not a real model: the probe is scripted');
});
afterEach(() => fs.rmSync(dir, { recursive: true, force: true }));

/** A probe answering `describe` with `native` and each timing with the next ms of its kernels' list. */
function scripted(
  native: { stamp: string } | { reason: string },
  ms: { prebuilt: number[]; native: number[] },
  extra: (r: CpuKernelProbeRequest) => CpuKernelProbeAnswer | null = () => null,
) {
  const calls: CpuKernelProbeRequest[] = [];
  const probe: KernelProbe = async (req) => {
    calls.push(req);
    const custom = extra(req);
    if (custom) return custom;
    if (req.action === 'describe') return { action: 'describe', native };
    const next = ms[req.kernels].shift();
    if (next === undefined) throw new Error(`no more ${req.kernels} timings scripted`);
    return {
      action: 'time',
      cpuBackend: req.kernels === 'native' ? 'libggml-cpu-native.so' : 'libggml-cpu-haswell.so',
      timings: [
        { threads: 1, msPerStep: next * 2 },
        { threads: 2, msPerStep: next },
      ],
    };
  };
  return { probe, calls };
}

const input = (mode: CpuKernelsMode, cacheFile?: string) => ({
  mode,
  modelPath,
  slots: 8,
  threads: 2,
  cores: 2,
  ...(cacheFile ? { cacheFile } : {}),
});

describe('--cpu-kernels prebuilt and native', () => {
  it.each<CpuKernelsMode>(['prebuilt', 'prebuilt:haswell'])(
    '%s asks nothing (with a VARIANT, the worker loads that library or says why not)',
    async (mode) => {
      const { probe, calls } = scripted({ stamp: 's' }, { prebuilt: [], native: [] });
      expect(await chooseCpuKernels(input(mode), probe)).toEqual({ kernels: mode, why: `--cpu-kernels ${mode}` });
      expect(calls).toEqual([]);
    },
  );

  it('native checks the build is usable here and times nothing', async () => {
    const { probe, calls } = scripted({ stamp: 's' }, { prebuilt: [], native: [] });
    expect((await chooseCpuKernels(input('native'), probe)).kernels).toBe('native');
    expect(calls).toEqual([{ action: 'describe' }]);
  });

  it('native without a usable build is an error naming why; auto then keeps the prebuilt kernels', async () => {
    const reason = 'built for another CPU (AMD EPYC); run npm run build:native again';
    const { probe } = scripted({ reason }, { prebuilt: [], native: [] });
    await expect(chooseCpuKernels(input('native'), probe)).rejects.toThrow(CpuKernelsUnavailable);
    await expect(chooseCpuKernels(input('native'), probe)).rejects.toThrow(reason);
    const auto = await chooseCpuKernels(input('auto'), probe);
    expect(auto).toEqual({ kernels: 'prebuilt', why: `the native CPU kernels are ${reason}` });
  });
});

describe('--cpu-kernels auto', () => {
  it('times prebuilt, native, native, prebuilt and takes native when its mean step is >= 3 % shorter', async () => {
    const { probe, calls } = scripted({ stamp: 's' }, { prebuilt: [80, 82], native: [72, 74] });
    const choice = await chooseCpuKernels(input('auto'), probe);
    expect(calls.map((c) => (c.action === 'time' ? c.kernels : c.action))).toEqual([
      'describe',
      'prebuilt',
      'native',
      'native',
      'prebuilt',
    ]);
    expect(calls[1]).toEqual({ action: 'time', kernels: 'prebuilt', modelPath, slots: 8, threads: 2, cores: 2 });
    expect(choice).toMatchObject({ kernels: 'native', msPerStep: { prebuilt: 81, native: 73 }, cached: false });
    expect(choice.why).toContain('0.901 x');
  });

  it('keeps the prebuilt kernels when native is less than 3 % faster, or slower', async () => {
    /** The kernels `auto` picks when the candidates time `ms` (a usable native build). */
    const autoPicks = async (ms: { prebuilt: number[]; native: number[] }) =>
      (await chooseCpuKernels(input('auto'), scripted({ stamp: 's' }, ms).probe)).kernels;
    expect(await autoPicks({ prebuilt: [100, 100], native: [98, 98] })).toBe('prebuilt');
    expect(await autoPicks({ prebuilt: [60, 61], native: [64, 65] })).toBe('prebuilt');
    expect(await autoPicks({ prebuilt: [100, 100], native: [97, 97] })).toBe('native');
  });

  it('a candidate is timed at up to the planned threads only', async () => {
    const { probe } = scripted({ stamp: 's' }, { prebuilt: [], native: [] }, (req) =>
      req.action === 'time'
        ? {
            action: 'time',
            cpuBackend: 'x',
            timings:
              req.kernels === 'native'
                ? [
                    { threads: 1, msPerStep: 50 },
                    { threads: 2, msPerStep: 10 },
                  ]
                : [
                    { threads: 1, msPerStep: 40 },
                    { threads: 2, msPerStep: 30 },
                  ],
          }
        : null,
    );
    // One planned thread: native's 10 ms at 2 threads does not count; 50 against 40 keeps prebuilt.
    const choice = await chooseCpuKernels({ ...input('auto'), threads: 1 }, probe);
    expect(choice).toMatchObject({ kernels: 'prebuilt', msPerStep: { prebuilt: 40, native: 50 } });
  });

  it('remembers the answer per model, slots, threads and native build: a second start times nothing', async () => {
    const cache = path.join(dir, 'cache', 'cpu-kernels.json');
    const first = scripted({ stamp: 's1' }, { prebuilt: [80, 80], native: [70, 70] });
    expect((await chooseCpuKernels(input('auto', cache), first.probe)).cached).toBe(false);
    const second = scripted({ stamp: 's1' }, { prebuilt: [], native: [] });
    expect(await chooseCpuKernels(input('auto', cache), second.probe)).toMatchObject({
      kernels: 'native',
      cached: true,
      msPerStep: { prebuilt: 80, native: 70 },
    });
    expect(second.calls).toEqual([{ action: 'describe' }]);
    // Another slot count, or a rebuilt native library, is another question.
    const otherSlots = scripted({ stamp: 's1' }, { prebuilt: [50, 50], native: [60, 60] });
    expect(await chooseCpuKernels({ ...input('auto', cache), slots: 4 }, otherSlots.probe)).toMatchObject({
      kernels: 'prebuilt',
      cached: false,
    });
    const rebuilt = scripted({ stamp: 's2' }, { prebuilt: [50, 50], native: [60, 60] });
    expect(await chooseCpuKernels(input('auto', cache), rebuilt.probe)).toMatchObject({
      kernels: 'prebuilt',
      cached: false,
    });
    expect(Object.keys(JSON.parse(fs.readFileSync(cache, 'utf8')) as object)).toHaveLength(3);
  });

  it('a corrupt cache file is ignored and replaced', async () => {
    const cache = path.join(dir, 'cpu-kernels.json');
    fs.writeFileSync(cache, '{"abc": {"prebuilt": "x"}, ');
    const { probe } = scripted({ stamp: 's' }, { prebuilt: [80, 80], native: [70, 70] });
    expect((await chooseCpuKernels(input('auto', cache), probe)).kernels).toBe('native');
    expect(Object.values(JSON.parse(fs.readFileSync(cache, 'utf8')) as object)).toEqual([{ prebuilt: 80, native: 70 }]);
  });

  it('a candidate that fails to run leaves the prebuilt kernels, saying why, and caches nothing', async () => {
    const cache = path.join(dir, 'cpu-kernels.json');
    const { probe } = scripted({ stamp: 's' }, { prebuilt: [80], native: [] });
    const choice = await chooseCpuKernels(input('auto', cache), probe);
    expect(choice.kernels).toBe('prebuilt');
    expect(choice.why).toBe('timing the native CPU kernels failed: no more native timings scripted');
    expect(fs.existsSync(cache)).toBe(false);
  });

  it('a stop while timing rejects with the stop, not a fallback', async () => {
    const stop = new AbortController();
    const { probe } = scripted({ stamp: 's' }, { prebuilt: [80, 80], native: [] }, (req) => {
      if (req.action === 'time' && req.kernels === 'native') {
        stop.abort(new Error('shutting down'));
        throw new Error('killed');
      }
      return null;
    });
    await expect(chooseCpuKernels({ ...input('auto'), signal: stop.signal }, probe)).rejects.toThrow('shutting down');
  });
});
