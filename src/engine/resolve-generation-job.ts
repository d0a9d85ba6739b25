import type { GenerationJob } from '../../native/generation-job.ts';
import type { GenerationRequest } from './generation.ts';
import { samplingFor } from './sampling-defaults.ts';

/** What the server allows every generation (the serve flags of the same names). */
export interface ServerLimits {
  /** Cap on completion tokens, and the default when a request sets none (>= 1, the config's range). */
  maxTokens: number;
}

/**
 * The one place a validated request becomes what is decoded: every default and every cap decided here, once
 * (the edge validated the request's ranges: maxTokens >= 1, topLogprobs 0..20). The job crosses to a model
 * worker and into the engine unchanged; each engine also ends a job when its slot's context is full.
 * `randomSeed` gives the seed of a request that set none.
 */
export function resolveGenerationJob(
  request: GenerationRequest,
  limits: ServerLimits,
  randomSeed?: () => number,
): GenerationJob {
  return {
    maxTokens: Math.min(request.maxTokens ?? limits.maxTokens, limits.maxTokens),
    stops: request.stop,
    sampling: samplingFor(request, randomSeed),
    grammar: request.grammar ?? '',
    topLogprobs: request.topLogprobs ?? -1,
    cachePartition: request.cachePartition,
    priority: request.schedule?.priority ?? 'interactive',
  };
}
