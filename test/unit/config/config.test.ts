import { describe, expect, it } from 'vitest';
import { ConfigError, parseServeConfig } from '../../../src/config/config.ts';
import { calibrationCores, planThreads } from '../../../src/engine/thread-plan.ts';

describe('serve config', () => {
  it('takes flags over env over defaults', () => {
    const c = parseServeConfig(['--port', '9000', '--slots=4'], { HEARTH_PORT: '8000', HEARTH_WORKERS: '2' });
    expect(c.port).toBe(9000);
    expect(c.slots).toBe(4);
    expect(c.workers).toBe(2);
    expect(c.engine).toBe('auto');
    expect(Object.isFrozen(c)).toBe(true);
  });

  it.each([
    [['--port', 'abc'], /--port: expected an integer/],
    [['--port', '70000'], /--port: 70000 is out of range/],
    [['--engine', 'gpu'], /--engine: must be one of/],
    [['--nope', '1'], /unknown option '--nope'/],
    [['--modle', 'x.gguf'], /unknown option '--modle': did you mean --model\?/],
    [['--slot', '4'], /unknown option '--slot': did you mean --slots\?/],
    [['--body-limit-byte', '1'], /did you mean --body-limit-bytes\?/],
    [['--model-id', 'noslash'], /--model-id/],
    [['--openai-base-url', 'ftp://x'], /openaiBaseUrl/],
  ])('rejects %j clearly', (argv, message) => {
    expect(() => parseServeConfig(argv, {})).toThrowError(ConfigError);
    expect(() => parseServeConfig(argv, {})).toThrowError(message);
  });

  it('an unknown option far from every name gets no suggestion', () => {
    expect(() => parseServeConfig(['--colour', 'red'], {})).toThrowError(/^unknown option '--colour' \(see --help\)$/);
  });

  it('--gpu-layers takes auto or a number of layers, and --slots stays unset unless given', () => {
    expect(parseServeConfig([], {})).toMatchObject({ gpuLayers: 'auto', gpuBackend: undefined, slots: undefined });
    expect(parseServeConfig(['--gpu-layers', '0'], {}).gpuLayers).toBe(0);
    expect(parseServeConfig(['--gpu-layers=12'], { HEARTH_GPU_LAYERS: 'auto' }).gpuLayers).toBe(12);
    expect(parseServeConfig([], { HEARTH_GPU_LAYERS: '99' }).gpuLayers).toBe(99);
    expect(parseServeConfig(['--gpu-backend', 'rel/libggml-cuda.so'], {}).gpuBackend).toMatch(
      /^\/.*\/rel\/libggml-cuda\.so$/,
    );
    for (const bad of ['-1', 'all', '1.5', '', ' ', '100001']) {
      expect(() => parseServeConfig(['--gpu-layers', bad], {}), bad).toThrowError(ConfigError);
    }
    expect(() => parseServeConfig(['--gpu-layers', 'all'], {})).toThrowError(
      /--gpu-layers: expected auto or a number of layers/,
    );
    expect(() => parseServeConfig([], { HEARTH_GPU_LAYERS: 'max' })).toThrowError(/HEARTH_GPU_LAYERS: expected auto/);
  });

  it('--cpu-kernels takes auto, prebuilt, native or prebuilt:VARIANT', () => {
    expect(parseServeConfig([], {}).cpuKernels).toBe('auto');
    for (const ok of ['auto', 'prebuilt', 'native', 'prebuilt:x64', 'prebuilt:haswell', 'prebuilt:zen4'])
      expect(parseServeConfig(['--cpu-kernels', ok], {}).cpuKernels).toBe(ok);
    expect(parseServeConfig([], { HEARTH_CPU_KERNELS: 'prebuilt:skylakex' }).cpuKernels).toBe('prebuilt:skylakex');
    for (const bad of ['fast', 'prebuilt:', 'prebuilt:../x', 'prebuilt:Haswell', 'native:x64', '']) {
      expect(() => parseServeConfig(['--cpu-kernels', bad], {}), bad).toThrowError(ConfigError);
    }
    expect(() => parseServeConfig([], { HEARTH_CPU_KERNELS: 'prebuilt:/tmp/lib' })).toThrowError(
      /HEARTH_CPU_KERNELS: expected auto, prebuilt, native or prebuilt:VARIANT/,
    );
  });

  it('names the variable for a bad env value', () => {
    expect(() => parseServeConfig([], { HEARTH_SLOTS: 'many' })).toThrowError(/HEARTH_SLOTS/);
  });

  it('scopes the prompt cache to the account by default; key and global on request; anything else is refused', () => {
    expect(parseServeConfig([], {}).promptCacheScope).toBe('account');
    expect(parseServeConfig(['--prompt-cache-scope', 'key'], {}).promptCacheScope).toBe('key');
    expect(parseServeConfig([], { HEARTH_PROMPT_CACHE_SCOPE: 'global' }).promptCacheScope).toBe('global');
    expect(() => parseServeConfig(['--prompt-cache-scope', 'workspace'], {})).toThrowError(
      /--prompt-cache-scope: must be one of account, key, global/,
    );
    expect(() => parseServeConfig([], { HEARTH_PROMPT_CACHE_SCOPE: 'none' })).toThrowError(/HEARTH_PROMPT_CACHE_SCOPE/);
  });
});

describe('thread plan', () => {
  it('keeps an explicit value', () => {
    expect(planThreads({ cores: 2, workers: 1, engine: 'native', requested: 3 })).toBe(3);
  });
  it('gives node-llama-cpp a core less than the machine when alone, never less than 1', () => {
    expect(planThreads({ cores: 2, workers: 1, engine: 'node-llama-cpp', requested: 0 })).toBe(1);
    expect(planThreads({ cores: 1, workers: 1, engine: 'node-llama-cpp', requested: 0 })).toBe(1);
    expect(planThreads({ cores: 8, workers: 2, engine: 'node-llama-cpp', requested: 0 })).toBe(4);
  });
  it('has the native loop calibrate 1..cores-per-worker threads only when --threads is 0 and there is a choice', () => {
    expect(calibrationCores({ cores: 2, workers: 1, engine: 'native', requested: 0 })).toBe(2);
    expect(calibrationCores({ cores: 2, workers: 1, engine: 'auto', requested: 0 })).toBe(2);
    expect(calibrationCores({ cores: 8, workers: 2, engine: 'native', requested: 0 })).toBe(4);
    expect(calibrationCores({ cores: 2, workers: 1, engine: 'native', requested: 2 })).toBe(0);
    expect(calibrationCores({ cores: 1, workers: 1, engine: 'native', requested: 0 })).toBe(0);
    expect(calibrationCores({ cores: 2, workers: 1, engine: 'node-llama-cpp', requested: 0 })).toBe(0);
  });
  it('reads the native engine settings: thread pool, poll, step token budget', () => {
    const d = parseServeConfig([], {});
    expect([d.persistentThreads, d.threadPoll, d.stepTokenBudget]).toEqual([true, 0, 0]);
    const c = parseServeConfig(['--thread-pool', 'false', '--thread-poll', '50', '--step-token-budget', '64'], {});
    expect([c.persistentThreads, c.threadPoll, c.stepTokenBudget]).toEqual([false, 50, 64]);
    expect(() => parseServeConfig(['--thread-poll', '101'], {})).toThrow(ConfigError);
    expect(() => parseServeConfig(['--step-token-budget', '-1'], {})).toThrow(ConfigError);
  });
});
