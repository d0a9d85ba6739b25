import type { GenerationJob, JobRelay } from '../../native/generation-job.ts';
import { DEFAULT_SAMPLING } from '../../src/engine/sampling-defaults.ts';
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
