import { spawnSync } from 'node:child_process';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { hearthKernelsStamp } from '../../native/cpu-kernels/hearth-kernels.ts';
import { nativeCpuKernels } from '../../native/paths.ts';
import { ensureTinyChatModel, ensureTinyModel } from '../../models/test-model-path.ts';
import { DEFAULT_TINY_REPLY } from '../../models/tiny-llama.ts';
import { probeInChild } from '../../src/engine/cpu-kernels.ts';
import { nativeAddonAvailable } from '../../src/worker/native-slot-engine.ts';
import { greedyReply, logLine } from '../helpers/hearth-log.ts';
import { type HearthProcess, startHearthProcess, nativeModelArgs } from '../helpers/hearth-process.ts';
import { tinyChatModel } from '../helpers/test-model.ts';

/**
 * The CPU kernels built for this machine (native/cpu-kernels-build.ts, by `npm run build:native`) and the
 * choice between them and node-llama-cpp's prebuilt ones (`--cpu-kernels`), for real: the probe child loads the
 * kind it is asked for and times decode steps; a server on the native kernels answers exactly as on the prebuilt
 * ones (the tiny model's greedy reply); `auto` times once per model and remembers. No timing is asserted (which
 * kernels win is the machine's business: bench/engine.ts reports it). Skipped, saying why, without the addon.
 */
const addon = nativeAddonAvailable();
const native = nativeCpuKernels();
const canBuild =
  process.platform === 'linux' && process.arch === 'x64' && spawnSync('cmake', ['--version']).status === 0;
const skip = !addon.ok
  ? `native addon unavailable: ${addon.reason}`
  : 'reason' in native
    ? `native CPU kernels ${native.reason}`
    : '';

describe.skipIf(!canBuild || !addon.ok)('npm run build:native', () => {
  it("built the CPU kernels for this machine (linux-x64 with cmake installed), with Hearth's own kernels in", () => {
    expect(native).toMatchObject({
      library: expect.stringMatching(/native\/build\/cpu-kernels\/libggml-cpu-native\.so$/),
      build: { hearthKernels: hearthKernelsStamp() },
    });
  });
});

describe.skipIf(skip !== '')(`CPU kernels for real${skip ? ` (skipped: ${skip})` : ''}`, () => {
  const servers: HearthProcess[] = [];
  const modelsDir = fs.mkdtempSync(path.join(os.tmpdir(), 'hearth-kernels-models-'));
  afterAll(async () => {
    await Promise.all(servers.map((s) => s.stop()));
    fs.rmSync(modelsDir, { recursive: true, force: true });
  });

  it('the probe says the native build is usable, and loads and times the kind it is asked for', async () => {
    expect(await probeInChild({ action: 'describe' })).toEqual({
      action: 'describe',
      native: { stamp: expect.stringMatching(/^\d+:\d+$/) },
    });
    const modelPath = await ensureTinyModel();
    for (const kernels of ['prebuilt', 'native'] as const) {
      const a = await probeInChild({ action: 'time', kernels, modelPath, slots: 2, threads: 2, cores: 2 });
      if (a.action !== 'time') throw new Error('not a timing');
      expect(a.cpuBackend).toMatch(
        kernels === 'native' ? /^libggml-cpu-native\.so$/ : /^libggml-cpu-(?!native)[\w-]+\.so$/,
      );
      expect(a.timings.map((t) => t.threads)).toEqual([1, 2]);
      for (const t of a.timings) expect(t.msPerStep).toBeGreaterThan(0);
    }
  });

  async function serve(kernels: string, model?: string): Promise<HearthProcess> {
    const s = await startHearthProcess({
      args: nativeModelArgs(model ?? (await tinyChatModel()), 'local/tiny-chat', {
        threads: 2,
        'cpu-kernels': kernels,
        'models-dir': modelsDir,
      }),
    });
    servers.push(s);
    await s.waitReady(120_000);
    return s;
  }

  const reply = (s: HearthProcess) => greedyReply(s, 'local/tiny-chat');

  it("--cpu-kernels native: the worker computes with the native library and the reply is the model's own", async () => {
    const s = await serve('native');
    expect(logLine(s, 'cpu kernels')).toMatchObject({ kernels: 'native', why: '--cpu-kernels native' });
    expect(logLine(s, 'model ready')).toMatchObject({ engine: 'native', cpuBackend: 'libggml-cpu-native.so' });
    expect(await reply(s)).toBe(DEFAULT_TINY_REPLY);
  });

  /** The top 5 tokens at each of `n` greedy steps after a prompt the script does not answer, and the tokens taken. */
  async function greedySteps(
    s: HearthProcess,
    n: number,
  ): Promise<{ tokens: string[]; top: Record<string, number>[] }> {
    const r = await fetch(`${s.baseUrl}/api/inference/v1/completions`, {
      method: 'POST',
      headers: { authorization: `Bearer ${s.key}`, 'content-type': 'application/json' },
      body: JSON.stringify({
        model: 'local/tiny-chat',
        prompt: 'one two three',
        max_tokens: n,
        temperature: 0,
        logprobs: 5,
      }),
    });
    expect(r.status).toBe(200);
    const body = (await r.json()) as {
      choices: [{ logprobs: { tokens: string[]; top_logprobs: Record<string, number>[] } }];
    };
    return { tokens: body.choices[0].logprobs.tokens, top: body.choices[0].logprobs.top_logprobs };
  }

  it("Q8_0 matrices (Hearth's Q8_0 kernel on AVX-512 VNNI CPUs, llamafile's elsewhere): the prebuilt build's answers", async () => {
    // Heads of 8 (width 64, 8 heads), a size Hearth's attention kernel leaves to ggml: the matrices alone differ.
    const model = await ensureTinyChatModel({ matrixType: 'Q8_0', headCount: 8, headCountKv: 4 });
    const seen: Record<string, number>[] = [];
    for (const kernels of ['native', 'prebuilt']) {
      const s = await serve(kernels, model);
      expect(logLine(s, 'model ready').cpuBackend).toEqual(
        kernels === 'native' ? 'libggml-cpu-native.so' : expect.stringMatching(/^libggml-cpu-(?!native)/),
      );
      expect(await reply(s)).toBe(DEFAULT_TINY_REPLY);
      seen.push((await greedySteps(s, 1)).top[0]!);
      await s.stop();
    }
    // The same tokens; log probabilities equal but for float summation order (here 4e-6 apart; a kernel that
    // mishandles its sign correction is off by tens).
    const [native, prebuilt] = seen as [Record<string, number>, Record<string, number>];
    expect(Object.keys(native).sort()).toEqual(Object.keys(prebuilt).sort());
    for (const [token, logprob] of Object.entries(prebuilt)) expect(native[token]).toBeCloseTo(logprob, 2);
  });

  it.each([
    [64, { embeddingLength: 256, headCount: 4, headCountKv: 2 }],
    [96, { embeddingLength: 384, headCount: 4, headCountKv: 2 }],
    [256, { embeddingLength: 512, headCount: 2, headCountKv: 1 }],
  ])(
    "head size %i (Hearth's attention kernel for generating rows on AVX-512 CPUs, ggml's elsewhere): the prebuilt build's answers",
    async (_, shape) => {
      const model = await ensureTinyChatModel(shape);
      const seen: Awaited<ReturnType<typeof greedySteps>>[] = [];
      for (const kernels of ['native', 'prebuilt']) {
        const s = await serve(kernels, model);
        expect(await reply(s)).toBe(DEFAULT_TINY_REPLY);
        seen.push(await greedySteps(s, 8));
        await s.stop();
      }
      // Step by step while both took the same tokens (after that their contexts differ): the same top tokens, log
      // probabilities within 0.02. They differ by ggml's rounding, not the kernel's: ggml's kernel rounds Q to fp16
      // and keeps V's running sum in fp16, which puts these 0.002-0.0043 apart; the kernel made to round as ggml
      // does matched the prebuilt build exactly over the first 5 steps, and against a double-precision reference
      // the kernel is within 2e-4 (flash_attn_decode_check.cpp). A kernel that mixes up heads or cells changes the
      // top tokens.
      const [native, prebuilt] = seen as [(typeof seen)[0], (typeof seen)[0]];
      let compared = 0;
      for (let i = 0; i < prebuilt.top.length && (i === 0 || native.tokens[i - 1] === prebuilt.tokens[i - 1]); i++) {
        expect(Object.keys(native.top[i]!).sort()).toEqual(Object.keys(prebuilt.top[i]!).sort());
        for (const [token, logprob] of Object.entries(prebuilt.top[i]!))
          expect(Math.abs(native.top[i]![token]! - logprob), `step ${i}, ${token}`).toBeLessThan(0.02);
        compared++;
      }
      expect(compared).toBeGreaterThanOrEqual(4);
    },
  );

  it('--cpu-kernels auto: times both at the first start, loads the one it names, and remembers it at the next', async () => {
    const first = await serve('auto');
    const chose = logLine(first, 'cpu kernels');
    expect(chose).toMatchObject({
      cached: false,
      msPerStep: { prebuilt: expect.any(Number), native: expect.any(Number) },
    });
    expect(logLine(first, 'model ready').cpuBackend).toEqual(
      chose.kernels === 'native' ? 'libggml-cpu-native.so' : expect.stringMatching(/^libggml-cpu-(?!native)/),
    );
    expect(await reply(first)).toBe(DEFAULT_TINY_REPLY);
    await first.stop();
    const second = await serve('auto');
    expect(logLine(second, 'cpu kernels')).toMatchObject({
      kernels: chose.kernels,
      cached: true,
      msPerStep: chose.msPerStep,
    });
    expect(fs.existsSync(path.join(modelsDir, 'cpu-kernels.json'))).toBe(true);
  });
});
