import { spawnSync } from 'node:child_process';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { DEFAULT_TINY_REPLY } from '../../models/tiny-llama.ts';
import { probeGpuInChild } from '../../src/engine/gpu-offload.ts';
import { nativeAddonAvailable } from '../../src/worker/native-slot-engine.ts';
import { greedyReply, logLine } from '../helpers/hearth-log.ts';
import { type HearthProcess, startHearthProcess } from '../helpers/hearth-process.ts';
import { tinyChatModel } from '../helpers/test-model.ts';

/**
 * `--gpu-layers` on a machine where the GPU cannot run, for real (CI has no GPU; bench/gpu.ts runs the GPU path on
 * one): the probe child loads the library it is given and answers, or dies, and the server computes on the CPU,
 * says why (a warning when a GPU was expected), reports it in /health and /metrics, and answers with the model's
 * own greedy reply. Three libraries that cannot run: a file that is no library, a real shared library that is no
 * ggml backend, and a "backend" whose init aborts the process (what a GPU whose kernels the driver cannot run does
 * to llama.cpp: GGML_ABORT on the first CUDA error), built here with the C compiler the native addon needs.
 */
const addon = nativeAddonAvailable();
const cc = spawnSync('cc', ['--version']).status === 0 ? 'cc' : 'gcc';

describe.skipIf(!addon.ok)(`GPU fallback${addon.ok ? '' : ` (skipped: ${addon.ok ? '' : addon.reason})`}`, () => {
  const servers: HearthProcess[] = [];
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'hearth-gpu-fallback-'));
  afterAll(async () => {
    await Promise.all(servers.map((s) => s.stop()));
    fs.rmSync(dir, { recursive: true, force: true });
  });

  const notALibrary = path.join(dir, 'not-a-library.so');
  fs.writeFileSync(notALibrary, 'this is not an ELF file\n');
  const aborting = path.join(dir, 'libggml-aborting.so');
  const source = path.join(dir, 'aborting.c');
  fs.writeFileSync(
    source,
    '#include <stdlib.h>\nvoid * ggml_backend_init(void) { abort(); }\nint ggml_backend_score(void) { return 1; }\n',
  );
  const built = spawnSync(cc, ['-shared', '-fPIC', '-o', aborting, source], { encoding: 'utf8' });
  /** A real shared library without ggml_backend_init: the C library of this process. */
  const notABackend = [
    '/lib/x86_64-linux-gnu/libm.so.6',
    '/usr/lib/x86_64-linux-gnu/libm.so.6',
    '/lib/aarch64-linux-gnu/libm.so.6',
    '/lib64/libm.so.6',
  ].find((f) => fs.existsSync(f));

  it('the probe lists the library --gpu-backend names as the only candidate', async () => {
    expect(await probeGpuInChild({ action: 'list', explicit: aborting })).toEqual({ libraries: [aborting] });
  });

  it('the probe answers for a library that cannot load, and a backend that aborts takes only the probe down', async () => {
    const modelPath = await tinyChatModel();
    const garbage = await probeGpuInChild({ action: 'run', library: notALibrary, modelPath, layers: -1 });
    expect(garbage).toMatchObject({
      ok: false,
      sawDevice: false,
      reason: expect.stringContaining(`could not load the GPU backend ${notALibrary}`),
    });
    if (notABackend) {
      expect(await probeGpuInChild({ action: 'run', library: notABackend, modelPath, layers: -1 })).toMatchObject({
        ok: false,
        sawDevice: false,
        reason: expect.stringContaining('could not load the GPU backend'),
      });
    }
    expect(built.status, built.stderr).toBe(0);
    await expect(probeGpuInChild({ action: 'run', library: aborting, modelPath, layers: -1 })).rejects.toThrow(
      /the GPU probe exited with SIGABRT/,
    );
  });

  async function serve(args: string[]): Promise<HearthProcess> {
    const s = await startHearthProcess({
      args: [
        '--model',
        await tinyChatModel(),
        '--model-id',
        'local/tiny-chat',
        '--engine',
        'native',
        '--threads',
        '2',
        ...args,
      ],
      env: { HEARTH_GPU_LAYERS: '' },
    });
    servers.push(s);
    await s.waitReady(120_000);
    return s;
  }

  const reply = (s: HearthProcess) => greedyReply(s, 'local/tiny-chat');

  it.each([
    ['a file that is no library', () => notALibrary, /could not load the GPU backend/],
    ['a backend that aborts the process', () => aborting, /the GPU probe exited with SIGABRT/],
  ])(
    "--gpu-layers auto with %s: a warning, the CPU, 8 slots, and the model's own reply",
    async (_name, library, why) => {
      const s = await serve(['--gpu-layers', 'auto', '--gpu-backend', library()]);
      expect(logLine(s, 'gpu unusable: computing on the cpu')).toMatchObject({
        level: 'warn',
        gpuLayers: 0,
        why: expect.stringMatching(why),
      });
      expect(logLine(s, 'model ready')).toMatchObject({
        engine: 'native',
        slots: 8,
        gpu: { backend: false, devices: [], gpuLayers: 0 },
      });
      const health = (await (await fetch(`${s.baseUrl}/health`)).json()) as Record<string, unknown>;
      expect(health).toMatchObject({ ok: true, engine: { kind: 'native', backend: 'cpu', devices: [], gpuLayers: 0 } });
      expect(health.engine).not.toHaveProperty('vram');
      expect(await (await fetch(`${s.baseUrl}/metrics`)).text()).toMatch(
        /^hearth_model_gpu_layers\{model="local\/tiny-chat"\} 0$/m,
      );
      expect(await reply(s)).toBe(DEFAULT_TINY_REPLY);
    },
  );

  it('--gpu-layers 0 probes nothing and says so at info level; --slots given is kept', async () => {
    const s = await serve(['--gpu-layers', '0', '--gpu-backend', aborting, '--slots', '3']);
    expect(logLine(s, 'gpu offload')).toMatchObject({ level: 'info', gpuLayers: 0, why: '--gpu-layers 0' });
    expect(s.logs()).not.toContain('probing gpu');
    expect(logLine(s, 'model ready')).toMatchObject({ slots: 3 });
    expect(await reply(s)).toBe(DEFAULT_TINY_REPLY);
  });
});
