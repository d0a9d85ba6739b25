import { describe, expect, it } from 'vitest';
import type { GenerationRequest } from '../../../src/engine/generation.ts';
import { resolveGenerationJob } from '../../../src/engine/resolve-generation-job.ts';
import { DEFAULT_SAMPLING } from '../../../src/engine/sampling-defaults.ts';

const request = (over: Partial<GenerationRequest> = {}): GenerationRequest => ({
  messages: [{ role: 'user', content: 'hi' }],
  stop: [],
  cachePartition: '',
  ...over,
});
const LIMITS = { maxTokens: 100 };

describe('resolveGenerationJob', () => {
  it("max_tokens: the request's, at most the server cap; none asked: the cap", () => {
    expect(resolveGenerationJob(request({ maxTokens: 7 }), LIMITS).maxTokens).toBe(7);
    expect(resolveGenerationJob(request({ maxTokens: 5000 }), LIMITS).maxTokens).toBe(100);
    expect(resolveGenerationJob(request(), LIMITS).maxTokens).toBe(100);
  });

  it('every field decided: free text, no logprobs, the defaults of sampling, a random seed when none is asked', () => {
    const job = resolveGenerationJob(request({ stop: ['x'], cachePartition: 'account:a' }), LIMITS, () => 42);
    expect(job).toEqual({
      maxTokens: 100,
      stops: ['x'],
      sampling: { ...DEFAULT_SAMPLING, seed: 42 },
      grammar: '',
      topLogprobs: -1,
      cachePartition: 'account:a',
      priority: 'interactive',
    });
  });

  it("the schedule's priority reaches the job (the native loop parks batch jobs for interactive ones)", () => {
    expect(resolveGenerationJob(request({ schedule: { tenant: 'a', priority: 'batch' } }), LIMITS).priority).toBe(
      'batch',
    );
    expect(resolveGenerationJob(request({ schedule: { tenant: 'a', priority: 'interactive' } }), LIMITS).priority).toBe(
      'interactive',
    );
  });

  it("the request's grammar, logprobs and sampler fields as asked", () => {
    const job = resolveGenerationJob(
      request({
        grammar: 'root ::= "a"',
        topLogprobs: 0,
        temperature: 0,
        topK: 3,
        repetitionPenalty: 1.2,
        seed: 2 ** 32 + 5,
      }),
      LIMITS,
      () => 42,
    );
    expect(job).toMatchObject({
      grammar: 'root ::= "a"',
      topLogprobs: 0,
      sampling: { temperature: 0, topK: 3, repeatPenalty: 1.2, seed: 5 },
    });
  });
});
