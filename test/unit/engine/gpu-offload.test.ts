import { describe, expect, it } from 'vitest';
import { chooseGpuOffload, type GpuProbe } from '../../../src/engine/gpu-offload.ts';
import type { GpuProbeAnswer, GpuProbeRequest } from '../../../src/engine/worker-protocol.ts';

/**
 * `--gpu-layers` (src/engine/gpu-offload.ts) with scripted candidates and probe in place of the library search and
 * the child processes: what each mode probes, which library wins, and when a CPU fallback is a warning.
 * test/model/gpu-fallback.test.ts runs the real probe on libraries that cannot load.
 */
const H100 = { name: 'CUDA0', description: 'NVIDIA H100 80GB HBM3', memoryFreeBytes: 80e9, memoryTotalBytes: 81e9 };
const ok = (gpuLayers = 25): GpuProbeAnswer => ({
  ok: true,
  device: H100,
  gpuLayers,
  modelLayers: 24,
  decodeMs: 12,
  completionTokens: 8,
});

/** A probe that lists `libs` (or the explicit library alone) and answers each run from `answers`; `calls` are the runs. */
function scripted(answers: Record<string, GpuProbeAnswer | Error>, libs: string[] = Object.keys(answers)) {
  const calls: Extract<GpuProbeRequest, { action: 'run' }>[] = [];
  const probe: GpuProbe = async (req) => {
    if (req.action === 'list') return { libraries: req.explicit ? [req.explicit] : libs };
    calls.push(req);
    const a = answers[req.library];
    if (a === undefined) throw new Error(`unscripted ${req.library}`);
    if (a instanceof Error) throw a;
    return a;
  };
  return { probe, calls };
}

describe('--gpu-layers', () => {
  it('0 probes nothing and computes on the CPU', async () => {
    const { probe, calls } = scripted({}, ['/a/libggml-cuda.so']);
    const c = await chooseGpuOffload({ mode: 0, modelPath: '/m.gguf' }, probe);
    expect(c).toEqual({ library: null, layers: 0, why: '--gpu-layers 0', warn: false });
    expect(calls).toEqual([]);
  });

  it('auto with no CUDA library is a CPU machine, not a warning', async () => {
    const { probe, calls } = scripted({});
    const c = await chooseGpuOffload({ mode: 'auto', modelPath: '/m.gguf' }, probe);
    expect(c).toMatchObject({ library: null, layers: 0, warn: false });
    expect(c.why).toMatch(/no CUDA backend library/);
    expect(calls).toEqual([]);
  });

  it('a number of layers with no CUDA library is a warning', async () => {
    const c = await chooseGpuOffload({ mode: 20, modelPath: '/m.gguf' }, scripted({}).probe);
    expect(c).toMatchObject({ library: null, layers: 0, warn: true });
  });

  it('auto offloads every layer with the first library whose probe runs the model', async () => {
    const { probe, calls } = scripted({ '/own/libggml-cuda.so': ok() }, [
      '/own/libggml-cuda.so',
      '/prebuilt/libggml-cuda.so',
    ]);
    const c = await chooseGpuOffload({ mode: 'auto', modelPath: '/m.gguf' }, probe);
    expect(c).toMatchObject({ library: '/own/libggml-cuda.so', layers: -1, warn: false, probe: { device: H100 } });
    expect(calls).toEqual([{ action: 'run', library: '/own/libggml-cuda.so', modelPath: '/m.gguf', layers: -1 }]);
  });

  it('a probe that crashes (PTX the driver cannot compile) moves on to the next library', async () => {
    const { probe, calls } = scripted({
      '/own/libggml-cuda.so': new Error(
        'the GPU probe exited with SIGABRT: CUDA error: the provided PTX was compiled with an unsupported toolchain',
      ),
      '/prebuilt/libggml-cuda.so': ok(12),
    });
    const c = await chooseGpuOffload({ mode: 12, modelPath: '/m.gguf' }, probe);
    expect(c).toMatchObject({ library: '/prebuilt/libggml-cuda.so', layers: 12, warn: false });
    expect(calls.map((r) => r.layers)).toEqual([12, 12]);
  });

  it('every library failing falls back to the CPU; a crash past loading is a warning even under auto', async () => {
    const crash = await chooseGpuOffload(
      { mode: 'auto', modelPath: '/m.gguf' },
      scripted({ '/a.so': new Error('the GPU probe exited with SIGABRT') }).probe,
    );
    expect(crash).toMatchObject({ library: null, layers: 0, warn: true });
    expect(crash.why).toMatch(/no usable GPU: \/a\.so: the GPU probe exited with SIGABRT/);

    const noDriver = await chooseGpuOffload(
      { mode: 'auto', modelPath: '/m.gguf' },
      scripted({
        '/a.so': {
          ok: false,
          reason: 'ggml could not load the GPU backend /a.so: libcuda.so.1: cannot open shared object file',
          sawDevice: false,
        },
      }).probe,
    );
    // A CPU-only host under auto: one plain line at info; the loader's error (libcuda, libcublas) only in `detail` (debug).
    expect(noDriver).toMatchObject({
      library: null,
      layers: 0,
      warn: false,
      why: 'no GPU found: computing on the cpu',
    });
    expect(noDriver.detail).toMatch(/libcuda\.so\.1/);
  });

  it('--gpu-backend names the only library tried, and a failure with it is a warning', async () => {
    const { probe, calls } = scripted(
      { '/mine.so': { ok: false, reason: 'the GPU backend /mine.so found no GPU device', sawDevice: false } },
      ['/own/libggml-cuda.so'],
    );
    const c = await chooseGpuOffload({ mode: 'auto', modelPath: '/m.gguf', backend: '/mine.so' }, probe);
    expect(calls.map((r) => r.library)).toEqual(['/mine.so']);
    expect(c).toMatchObject({ library: null, warn: true });
  });

  it('a stop during the probe rejects instead of falling back', async () => {
    const ac = new AbortController();
    const probe: GpuProbe = async (req) => {
      if (req.action === 'list') return { libraries: ['/a.so'] };
      ac.abort(new Error('stopping'));
      throw new Error('killed');
    };
    await expect(chooseGpuOffload({ mode: 'auto', modelPath: '/m.gguf', signal: ac.signal }, probe)).rejects.toThrow(
      'stopping',
    );
  });
});
