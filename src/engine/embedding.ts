import type { RawPrompt } from '../protocol/chat-request.ts';
import type { GenerationSchedule } from './generation.ts';

/** Embeddings of the shared model: what the gateway asks of an engine that serves them (the worker's task: embedding-task.ts). */

/** One request's vectors (unit length, in the inputs' order) and the tokens its inputs took. */
export interface EmbeddingResult {
  vectors: Float32Array[];
  promptTokens: number;
}

export interface EmbeddingEngine {
  /**
   * Rejects with an ApiError: model_warming_up / model_failed / shutting_down / queue_full (503) as
   * generate() does, and a 400 naming `input[i]` for an input longer than the context or with a token id
   * outside the vocabulary. `schedule`: who it is for and at which priority, as a generation's (absent:
   * interactive, the anonymous tenant): it waits for the pool in the scheduler's order, with the generations.
   * `signal` aborts once the request's client left: the engine stops its work for it and rejects.
   */
  embed(inputs: readonly RawPrompt[], schedule?: GenerationSchedule, signal?: AbortSignal): Promise<EmbeddingResult>;
}
