import type { GenerationJob, JobRelay, TokenLogprob } from '../../native/generation-job.ts';
import type { EngineFailureCode } from '../errors/engine-failure.ts';
import type { SlotFinishReason } from '../engine/worker-protocol.ts';

/**
 * The token-level engine a model worker drives. Three implementations: the native continuous-batching
 * loop (native/, default), node-llama-cpp's own context sequences (portable fallback) and the instant test engine.
 *
 * A job is a GenerationJob (native/generation-job.ts) as the engine resolved it, taken as it is, with the
 * prompt's tokens (after the chat template, BOS included where the model wants one). Every engine ends a job
 * at `maxTokens` completion tokens or when its slot's context is full ('length'), before any of `stops`
 * ('stop', the stop text not emitted), or at the model's end of generation ('stop'). A `grammar` is parsed
 * once per distinct text; an invalid one ends the job with onError code 'invalid_grammar'. A job reuses only
 * KV its `cachePartition` left: a slot holding another partition's KV is treated as holding nothing.
 *
 * Threading: an engine lives inside one Piscina worker thread and is used only from that thread's
 * JavaScript. Callbacks of a job are invoked on that same thread, in order:
 *   onPrompt? -> onText* -> (onDone | onError), exactly one terminal callback per job.
 * After `cancel()` the job ends with onDone({finishReason:'cancelled'}) as soon as its slot is freed.
 */
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
   * `logprobs` only when the job asked for them (topLogprobs >= 0): one entry per token whose text this call carries.
   */
  onText(text: string, tokenCount: number, logprobs?: TokenLogprob[]): void;
  onDone(result: SlotJobResult): void;
  onError(error: { message: string; code: EngineFailureCode }): void;
}

export interface SlotJobHandle {
  /** Idempotent. Frees the job's slot at the next step boundary (never waits for a whole step). */
  cancel(): void;
  /**
   * Gives the job's slot to the next job that waits for one (fair share between tenants): the job pauses and
   * resumes with the same answer. Engines without preemption leave it out.
   */
  yieldSlot?(): void;
}

export interface SlotEngine {
  readonly kind: 'native' | 'node-llama-cpp' | 'instant';
  readonly contextSize: number;
  readonly slotCount: number;
  /** submit()'s `relay` is honoured: a relayed job's onPrompt / onText are never called, its events go to the relay. */
  readonly relaysEvents: boolean;
  /**
   * Throws if all slots are busy (the main thread's admission keeps this from happening). `promptTokens`: at
   * most contextSize - 1. `relay`: engines without relaysEvents ignore it.
   */
  submit(promptTokens: Uint32Array, job: GenerationJob, events: SlotJobEvents, relay?: JobRelay): SlotJobHandle;
  /** Idempotent: cancels running jobs and frees the context and model. */
  dispose(): Promise<void>;
}
