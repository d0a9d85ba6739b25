import type { SamplingParams } from '../../native/generation-job.ts';
import type { SamplingOptions } from '../protocol/chat-request.ts';

export type { SamplingParams } from '../../native/generation-job.ts';

/**
 * Sampler settings for a request. Unset fields take llama-server's defaults (temperature 0.8, top-k 40,
 * top-p 0.95, min-p 0.05, no repeat penalty) so Hearth and llama.cpp sample alike; a request's `temperature`,
 * `top_p` and the llama-server extensions `top_k`, `min_p`, `repetition_penalty` override them, OpenAI's
 * presence/frequency penalties map onto llama.cpp's. No seed: random.
 */
export const DEFAULT_SAMPLING = {
  temperature: 0.8,
  topP: 0.95,
  topK: 40,
  minP: 0.05,
  repeatPenalty: 1,
  presencePenalty: 0,
  frequencyPenalty: 0,
  penaltyLastN: 64,
  seed: 0,
} satisfies Required<SamplingParams>;

/** A request's sampler settings: its own where given, DEFAULT_SAMPLING's otherwise; no seed: `randomSeed()`. */
export function samplingFor(
  o: SamplingOptions,
  randomSeed: () => number = () => (Math.random() * 0xffffffff) >>> 0,
): SamplingParams {
  return {
    ...DEFAULT_SAMPLING,
    temperature: o.temperature ?? DEFAULT_SAMPLING.temperature,
    topP: o.topP ?? DEFAULT_SAMPLING.topP,
    topK: o.topK ?? DEFAULT_SAMPLING.topK,
    minP: o.minP ?? DEFAULT_SAMPLING.minP,
    repeatPenalty: o.repetitionPenalty ?? DEFAULT_SAMPLING.repeatPenalty,
    presencePenalty: o.presencePenalty ?? 0,
    frequencyPenalty: o.frequencyPenalty ?? 0,
    seed: o.seed !== undefined ? o.seed >>> 0 : randomSeed(),
  };
}
