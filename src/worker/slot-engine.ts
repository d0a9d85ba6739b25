import type { SamplingParams } from '../engine/sampling-defaults.ts';
import type { JobRelay, SlotFinishReason } from '../engine/worker-protocol.ts';
import type { TokenLogprob } from '../protocol/chat-delta.ts';

/**
 * The token-level engine a model worker drives. Two implementations: the native continuous-batching
 * loop (native/, default) and node-llama-cpp's own context sequences (portable fallback).
 *
 * Threading: an engine lives inside one Piscina worker thread and is used only from that thread's
 * JavaScript. Callbacks of a job are invoked on that same thread, in order:
 *   onPrompt? -> onText* -> (onDone | onError), exactly one terminal callback per job.
 * After `cancel()` the job ends with onDone({finishReason:'cancelled'}) as soon as its slot is freed.
 */
export interface SlotJob {
  /** Prompt after the chat template, tokenized (BOS included where the model wants one). */
  promptTokens: Uint32Array;
  /** Already capped by the server to what fits the context. >= 1. */
  maxTokens: number;
  /** Generation stops before any of these strings; the stop text itself is not emitted. */
  stop: string[];
  sampling: SamplingParams;
  /**
   * GBNF (root rule `root`, llama.cpp syntax) the completion must match; absent = free text. Each engine
   * parses a distinct text once and caches it; end of generation is allowed only where the grammar is
   * complete. An invalid grammar ends the job with onError code 'invalid_grammar'.
   */
  grammar?: string | undefined;
  /** Absent: no logprobs (nothing computed). 0..20: onText gets each token's logprob and this many alternatives. */
  topLogprobs?: number | undefined;
  /**
   * Prompt-cache partition (opaque; absent = ''): the job reuses only KV that jobs of the same partition left
   * (a slot's prefix, the native host prompt cache). A slot holding another partition's KV is treated as
   * holding nothing: its prefix is never compared with this prompt, and its KV is cleared before the job runs.
   */
  cachePartition?: string | undefined;
  /**
   * Engines with `relaysEvents` send this job's events to the relay instead (see JobRelay) and call only its
   * onDone / onError here; other engines ignore it.
   */
  relay?: JobRelay | undefined;
}

export interface SlotJobResult {
  finishReason: SlotFinishReason;
  promptTokens: number;
  /** Prompt tokens reused from the slot's prefix cache (not evaluated again). */
  cachedTokens: number;
  completionTokens: number;
  /** The stop string (of the job's `stop`) that ended the text, when one did. */
  stop?: string | undefined;
}

export interface SlotJobEvents {
  /** Prompt evaluated (or reused); generation of the first token follows. */
  onPrompt?(info: { promptTokens: number; cachedTokens: number }): void;
  /**
   * New text since the last call (complete UTF-8 only, stop strings withheld); tokenCount tokens produced it.
   * `logprobs` only when the job asked for them: one entry per token whose text this call carries.
   */
  onText(text: string, tokenCount: number, logprobs?: TokenLogprob[]): void;
  onDone(result: SlotJobResult): void;
  onError(error: { message: string; code: string }): void;
}

export interface SlotJobHandle {
  /** Idempotent. Frees the job's slot at the next step boundary (never waits for a whole step). */
  cancel(): void;
}

export interface SlotEngine {
  readonly kind: 'native' | 'node-llama-cpp' | 'instant';
  readonly contextSize: number;
  readonly slotCount: number;
  /** SlotJob.relay is honoured: a relayed job's onPrompt / onText are never called. */
  readonly relaysEvents: boolean;
  /** Throws if all slots are busy (the main thread's admission keeps this from happening). */
  submit(job: SlotJob, events: SlotJobEvents): SlotJobHandle;
  /** Idempotent: cancels running jobs and frees the context and model. */
  dispose(): Promise<void>;
}
