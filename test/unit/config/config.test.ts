import { describe, expect, it } from 'vitest';
import { ConfigError, parseServeConfig } from '../../../src/config/config.ts';
import { planThreads } from '../../../src/engine/thread-plan.ts';

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
    [['--model-id', 'noslash'], /--model-id/],
    [['--openai-base-url', 'ftp://x'], /openaiBaseUrl/],
  ])('rejects %j clearly', (argv, message) => {
    expect(() => parseServeConfig(argv, {})).toThrowError(ConfigError);
    expect(() => parseServeConfig(argv, {})).toThrowError(message);
  });

  it('names the variable for a bad env value', () => {
    expect(() => parseServeConfig([], { HEARTH_SLOTS: 'many' })).toThrowError(/HEARTH_SLOTS/);
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
});
