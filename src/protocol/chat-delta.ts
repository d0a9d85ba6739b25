import type { ApiError } from '../errors/api-error.ts';
import type { TokenLogprob } from '../../native/generation-job.ts';

/**
 * The one stream a chat completion is answered from, whatever produced it (the shared model's engine or an
 * upstream provider): content (with logprobs when asked for), tool-call fragments, then exactly one finish.
 * The HTTP responder turns these into a JSON completion or SSE chunks; nothing upstream of it knows OpenAI's
 * wire shape. Plain data; main thread.
 */

/** One generated token's log-probability, as OpenAI's `logprobs.content[i]` carries it (the addon's own shape). */
export type { TokenLogprob } from '../../native/generation-job.ts';

export type ChatFinishReason = 'stop' | 'length' | 'tool_calls';

export interface ChatUsage {
  promptTokens: number;
  completionTokens: number;
  /** Prompt tokens served from a cache, when the producer knows. */
  cachedTokens?: number | undefined;
}

export type ChatDelta =
  | { type: 'content'; text: string; logprobs?: TokenLogprob[] | undefined }
  /** Text the model's template marks as thinking (reasoning-split.ts), kept apart from the answer's content. */
  | { type: 'reasoning'; text: string }
  /**
   * A fragment of tool call `index` (0-based, in order): the first fragment of a call carries `id` and
   * `name`, later ones only more `arguments` text (OpenAI streams them exactly so).
   */
  | { type: 'tool_call'; index: number; id?: string | undefined; name?: string | undefined; arguments: string }
  /** `stopSequence`: which of the request's `stop` strings ended the text, when one did (the Messages API's `stop_sequence`). */
  | { type: 'finish'; reason: ChatFinishReason; usage?: ChatUsage | undefined; stopSequence?: string | undefined };

/**
 * Where a producer pushes one answer's deltas (the responder implements it): push* then at most one fail.
 * After a `finish` delta or fail() nothing more is pushed. Calls after the consumer went away are ignored.
 * Main thread; synchronous, so the shared model's hot path costs no promise per token.
 */
export interface ChatDeltaSink {
  push(delta: ChatDelta): void;
  fail(error: ApiError): void;
}
