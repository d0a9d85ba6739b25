import type { GenerationJob, JobRelay } from '../../native/generation-job.ts';
import { DEFAULT_SAMPLING, type SamplingParams } from '../../src/engine/sampling-defaults.ts';
import type { SlotEngine, SlotJobEvents, SlotJobHandle } from '../../src/worker/slot-engine.ts';

/** A job as a test writes it: the prompt's tokens, a relay maybe, and the GenerationJob fields it sets. */
export interface TestJob extends Partial<GenerationJob> {
  promptTokens: Uint32Array;
  relay?: JobRelay | undefined;
}

/** A GenerationJob with `fields`; the rest: 16 tokens, no stops, greedy, free text, no logprobs, the shared partition. */
export function generationJob(fields: Partial<GenerationJob> = {}): GenerationJob {
  return {
    maxTokens: 16,
    stops: [],
    sampling: { ...DEFAULT_SAMPLING, temperature: 0 },
    grammar: '',
    topLogprobs: -1,
    cachePartition: '',
    ...fields,
  };
}

/** Submits a TestJob to `engine` (SlotEngine.submit with the job completed by generationJob). */
export function submitJob(engine: SlotEngine, job: TestJob, events: SlotJobEvents): SlotJobHandle {
  const { promptTokens, relay, ...fields } = job;
  return engine.submit(promptTokens, generationJob(fields), events, relay);
}

/** Greedy sampling with every other sampler neutral (no top-k/p, min-p or penalties) and a fixed seed: one output per prompt. */
export const GREEDY_SAMPLING: Readonly<Required<SamplingParams>> = Object.freeze({
  temperature: 0,
  topP: 1,
  topK: 0,
  minP: 0,
  repeatPenalty: 1,
  presencePenalty: 0,
  frequencyPenalty: 0,
  penaltyLastN: 64,
  seed: 1,
});
