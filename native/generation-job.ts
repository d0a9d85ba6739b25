/**
 * The types the addon speaks, type-only (no code): what one generation decodes, as the engine resolves it
 * (src/engine/resolve-generation-job.ts) and as it crosses to a model worker and into the addon unchanged.
 * Field names are those of native/src/loop_types.h (JobSpec, SamplingSpec, TokenLogprob); src/engine and
 * src/worker import these, native/ imports nothing of src/.
 */

/** Sampler chain settings, mapped 1:1 onto llama.cpp's samplers (SamplingSpec). */
export interface SamplingParams {
  /** 0 = greedy. */
  temperature: number;
  /** 1 = disabled. */
  topP: number;
  /** 0 = disabled. */
  topK: number;
  /** 0 = disabled. */
  minP: number;
  /** 1 = disabled. */
  repeatPenalty: number;
  presencePenalty: number;
  frequencyPenalty: number;
  /** How many recent tokens the penalties look at (-1 = the whole slot context). */
  penaltyLastN: number;
  /** 32-bit unsigned seed. */
  seed: number;
}

/**
 * One generation's decoding, every field decided (JobSpec less its id and prompt tokens, which the worker
 * adds). Each engine also ends a job when its slot's context is full.
 */
export interface GenerationJob {
  /** Completion tokens at most: >= 1, at most the server's cap. */
  maxTokens: number;
  /** Generation stops before any of these strings; the stop text itself is not emitted. */
  stops: string[];
  sampling: SamplingParams;
  /**
   * GBNF (root rule `root`, llama.cpp syntax) the whole completion must match; '' = free text. Each engine
   * parses a distinct text once; an invalid one ends the job with the error code 'invalid_grammar'.
   */
  grammar: string;
  /** -1: no logprobs (nothing computed). 0..20: each token's logprob and this many alternatives. */
  topLogprobs: number;
  /**
   * The prompt-cache partition (opaque: the account, the key, or '' for one shared partition): the job reuses
   * only KV that jobs of the same partition left, in a slot or in the host prompt cache (issue #28).
   */
  cachePartition: string;
  /**
   * Scheduling priority (contract "Fair share and priority between tenants"); absent = 'interactive'. The native
   * loop parks a running 'batch' job when an interactive job has no free slot (its KV kept in the prompt cache,
   * its sampler and stop state kept whole) and resumes it when a slot frees; the other engines ignore it (the
   * main thread's scheduler orders their queue).
   */
  priority?: 'interactive' | 'batch';
}

/**
 * Where a native job's events go straight from the loop thread: the main thread's event relay `id`, the
 * task known there as `tag` (native/src/event_relay.h).
 */
export interface JobRelay {
  id: number;
  tag: number;
}

/**
 * Why the addon refused or ended a job, or failed an embedding: the stable codes native/src emits (slot_loop.cpp,
 * slot_loop_wrap.cpp, embedder.cpp, embed_wrap.cpp). A part of EngineFailureCode (src/errors/engine-failure.ts).
 */
export type NativeFailureCode =
  | 'engine_disposed'
  | 'engine_not_ready'
  | 'model_embeddings_only'
  | 'slots_busy'
  | 'empty_prompt'
  | 'context_length_exceeded'
  | 'invalid_token'
  | 'invalid_grammar'
  | 'grammar_failed'
  | 'relay_closed'
  | 'embedding_failed'
  | 'invalid_input';

/** One generated token's log-probability, as OpenAI's `logprobs.content[i]` carries it. */
export interface TokenLogprob {
  token: string;
  logprob: number;
  /** UTF-8 bytes of the token's text. */
  bytes: number[];
  /** The most likely alternatives at that position (length = the job's topLogprobs), best first. */
  top: Array<{ token: string; logprob: number; bytes: number[] }>;
}

/**
 * How the native loop runs (the serve flags of the same names; the config resolves every value, the worker
 * passes them to the addon as they are).
 */
export interface NativeTuning {
  /** Keep llama.cpp's repacked weight layouts (false = llama-server's --no-repack). */
  weightRepack: boolean;
  /** Persistent compute threads (llama-server's threadpool); false = threads started per decode. */
  persistentThreads: boolean;
  /** How long idle compute threads poll before sleeping, 0..100 (llama-server's --poll is 50). */
  threadPoll: number;
  /** Most tokens per step while a slot is generating (long prompts are prefilled in chunks); 0 = batch size. */
  stepTokenBudget: number;
  /** Host-memory prompt cache: MiB of KV state kept for prompts no slot holds any more (--cache-ram); 0 = none. */
  promptCacheMiB: number;
  /** Prefill pacing: while slots generate, a step with prompt chunks takes at most this % of a decode-only step (0 = off). */
  prefillStepPercent: number;
  /**
   * While slots generate, a prompt of at most this many tokens to evaluate rides in their pass, one token a step,
   * instead of a pass of its own (0 = off).
   */
  promptRideTokens: number;
  /** One KV buffer shared by all slots instead of a stream per slot. */
  kvUnified: boolean;
}
