import type { RawPrompt } from '../protocol/chat-request.ts';

/**
 * The model worker's Piscina task `embed` (run with Piscina's `name` option beside the generation task),
 * between LocalEngine.embed and the worker (model-worker.ts).
 */

/** The worker task: tokenize every input with the model's vocabulary (no chat template), then embed them. */
export interface EmbeddingTask {
  inputs: RawPrompt[];
  /**
   * One Int32 that the main thread sets to 1 (Atomics.store) once the request's client left: the worker computes
   * nothing more for it and answers `cancelled` (input-embedder.ts reads it between its calls).
   */
  cancel?: SharedArrayBuffer;
}

/**
 * The worker's answer: every input's unit vector, flat (`dimensions` floats each, in order), and each input's
 * token count; or why an input was refused (the first one found).
 */
export type EmbeddingTaskResult =
  | { ok: true; vectors: Float32Array; dimensions: number; tokens: number[] }
  | { ok: false; index: number; reason: 'too_long'; atLeastTokens: number; contextSize: number }
  | { ok: false; index: number; reason: 'invalid_token'; vocabularySize: number }
  | { ok: false; reason: 'cancelled' };
