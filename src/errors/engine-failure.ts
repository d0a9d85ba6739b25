import type { NativeFailureCode } from '../../native/generation-job.ts';
import type { ApiError } from './api-error.ts';
import { contextLengthExceeded, internalError, invalidRequest } from './errors.ts';

/**
 * A failure of a model worker or of its engine, as it crosses from the worker thread to the main thread:
 * plain data with a stable `code` and only the facts a client may see. `detail` (an engine's own message,
 * a stack, a path) is for the server log only and never reaches a client. The main thread maps it with
 * `engineFailureToApiError` (also reached through `toApiError`), the one place that decides what a client sees.
 */
export type EngineFailure =
  | {
      kind: 'engine-failure';
      code: 'context_length_exceeded';
      promptTokens: number;
      contextSize: number;
      atLeast: boolean;
    }
  /** Anything else (`code` names it for the log and metrics). */
  | { kind: 'engine-failure'; code: EngineFailureCode; detail: string };

/**
 * Every code an engine failure may carry, one union from the addon to the client mapping: the addon's own
 * (NativeFailureCode), then the model worker's and the main thread's.
 */
export type EngineFailureCode =
  | NativeFailureCode
  /** The node-llama-cpp engine failed, or a worker threw something unnamed. */
  | 'engine_error'
  /** A job callback threw in the worker (native-slot-engine.ts). */
  | 'callback_failed'
  /** A raw prompt's token id outside the vocabulary, found while the worker built the prompt. */
  | 'invalid_prompt_token'
  /** Loading the native engine: a bad option, no addon, or llama.cpp could not load the model. */
  | 'invalid_option'
  | 'addon_unavailable'
  | 'model_load_failed'
  /** Main thread: the engine ended a generation nobody cancelled; a pool task or an embedding task failed. */
  | 'engine_stopped'
  | 'worker_task_failed';

export const engineFailure = {
  /** `atLeast`: tokenizing stopped at the limit, so `promptTokens` is a lower bound. */
  contextLengthExceeded: (promptTokens: number, contextSize: number, atLeast = false): EngineFailure => ({
    kind: 'engine-failure',
    code: 'context_length_exceeded',
    promptTokens,
    contextSize,
    atLeast,
  }),
  /** `detail` goes to the log only. */
  internal: (code: EngineFailureCode, detail: unknown): EngineFailure => ({
    kind: 'engine-failure',
    code,
    detail: detail instanceof Error ? detail.message : String(detail),
  }),
};

export function isEngineFailure(value: unknown): value is EngineFailure {
  return (
    typeof value === 'object' &&
    value !== null &&
    (value as { kind?: unknown }).kind === 'engine-failure' &&
    typeof (value as { code?: unknown }).code === 'string'
  );
}

/** Engine codes that are the request's fault: a 400 of their own, still without the engine's message. */
const REQUEST_FAILURES: Partial<Record<EngineFailureCode, () => ApiError>> = {
  invalid_grammar: () =>
    invalidRequest('The requested output format cannot be enforced (its grammar was refused)', null, 'invalid_grammar'),
  invalid_prompt_token: () =>
    invalidRequest("'prompt' holds a token id outside the model's vocabulary", 'prompt', 'invalid_value'),
  model_embeddings_only: () =>
    invalidRequest(
      "The model is an embedding model (an encoder such as BERT): it serves '/embeddings' only, not text generation",
      'model',
      'model_not_supported',
    ),
  empty_prompt: () =>
    invalidRequest("'prompt' is empty: it has no tokens for the model to continue from", 'prompt', 'invalid_value'),
};

/** What a client sees of an engine failure: the documented error for known codes, else the generic 500 internal_error. */
export function engineFailureToApiError(f: EngineFailure): ApiError {
  if (f.code === 'context_length_exceeded' && 'promptTokens' in f)
    return contextLengthExceeded(f.promptTokens, f.contextSize, f.atLeast);
  return REQUEST_FAILURES[f.code]?.() ?? internalError();
}

/** The log-only part of a failure (undefined for failures that are the client's, like an over-long prompt). */
export function engineFailureDetail(f: EngineFailure): string | undefined {
  return 'detail' in f ? f.detail : undefined;
}
