import type { Priority } from '../protocol/priority.ts';
import type { ReasoningSyntax } from '../protocol/reasoning-split.ts';
import type { GpuInfo } from './worker-protocol.ts';
import type { ApiError } from '../errors/api-error.ts';
import type { TokenLogprob } from '../../native/generation-job.ts';
import type { ChatMessage, FunctionTool, RawPrompt, SamplingOptions } from '../protocol/chat-request.ts';

/**
 * One chat generation as the gateway asks for it (validated at the edge; the template is applied in the worker).
 * The engine resolves it into a GenerationJob once (resolve-generation-job.ts).
 */
export interface GenerationRequest extends SamplingOptions {
  messages: ChatMessage[];
  /**
   * A raw prompt (legacy completions): text the model sees as it is, without any chat template (the model's
   * BOS token first when its vocabulary asks for one), or token ids taken as they are. When given, `messages`
   * and `tools` are ignored (pass []). Absent: the chat template renders `messages`.
   */
  prompt?: RawPrompt | undefined;
  /** Functions the chat template shows the model (absent or [] = none). */
  tools?: FunctionTool[] | undefined;
  /**
   * A GBNF grammar (root rule `root`, llama.cpp syntax) the whole completion must match; absent = free text.
   * The engine compiles each distinct grammar text once and caches it.
   */
  grammar?: string | undefined;
  /** undefined: no logprobs (the hot path computes none). n (0..20): the chosen token's and the n best. */
  topLogprobs?: number | undefined;
  /**
   * Prompt-cache partition: an opaque string naming who may reuse this prompt's cached state (the gateway's
   * `promptCacheScope`: the account, the key, or '' for everyone). The engine's caches (slot prefixes, the
   * host prompt cache) are keyed by it, so `cached_tokens` and time to first token never depend on prompts
   * of another partition (issue #28).
   */
  cachePartition: string;
  /**
   * Only count the prompt's tokens (the Messages API's count_tokens): the worker builds the prompt and the
   * generation ends at once with onDone (finishReason 'stop', promptTokens, 0 completion tokens); no slot is
   * taken and no request metrics are recorded.
   */
  countOnly?: boolean | undefined;
  /**
   * Scheduling (contract "Fair share and priority between tenants"): who the generation is for and at which
   * priority. The engine queues interactive before batch work, shares slots between tenants round-robin weighted
   * by tokens, and a batch generation yields its slot to interactive work that waits (resumed later, its state
   * kept). Absent: interactive, the anonymous tenant ''. The Batch API sets batch.
   */
  schedule?: GenerationSchedule | undefined;
  /** Text after the rendered chat prompt (a thinking model's empty thinking block when its thinking is off); '' or absent: none. */
  promptSuffix?: string | undefined;
}

export type { TokenLogprob } from '../../native/generation-job.ts';

/** A generation's place in the scheduler (fair-scheduler.ts): never carries anything into metrics labels. */
export interface GenerationSchedule {
  /** The tenant whose share the generation's tokens count against (the account id). */
  tenant: string;
  priority: Priority;
}

/** A generation (or embedding request) the gateway did not place (tests, internal callers): interactive, the anonymous tenant. */
export const DEFAULT_SCHEDULE: GenerationSchedule = { tenant: '', priority: 'interactive' };

export interface GenerationResult {
  finishReason: 'stop' | 'length';
  promptTokens: number;
  cachedTokens: number;
  completionTokens: number;
  /** The stop string that ended the text, when one did: one of the request's `stop` or a template's own stop text. */
  stop?: string | undefined;
}

/**
 * Receives one generation's events on the main thread, in order: onText* then exactly one of onDone /
 * onError. Not called after the handle was cancelled (a cancelled generation ends silently).
 */
export interface GenerationSink {
  /** `logprobs` is given (one entry per token of `text`) only when the request asked for them. */
  onText(text: string, logprobs?: TokenLogprob[]): void;
  onDone(result: GenerationResult): void;
  onError(error: ApiError): void;
}

export interface GenerationHandle {
  /** Idempotent; frees the slot (or the queue place) at once. */
  cancel(): void;
}

/** `unloaded`: a model of the registry that is not loaded now (model-registry.ts); an engine itself is never in it. */
export type ModelState = 'unloaded' | 'pulling' | 'loading' | 'ready' | 'failed';

export interface ModelStatus {
  state: ModelState;
  modelId: string;
  /** Pull progress while pulling: bytes so far / total (0 when unknown). */
  pull: { downloadedBytes: number; totalBytes: number; ratio: number } | null;
  /** Workers that finished loading / all workers. */
  workersReady: number;
  workers: number;
  engine: string | null;
  error: string | null;
  metadata: {
    architecture: string;
    contextLength: number | null;
    parameterCount: number;
    quantization: string | null;
    hasChatTemplate: boolean;
    /** How the chat template marks thinking (null: it does not), so replies are split into reasoning and answer. */
    reasoning: ReasoningSyntax | null;
  } | null;
  /** Context tokens per slot actually served. */
  contextSize: number | null;
  slots: number;
  threads: number;
  /** Where the workers compute, once one is ready (null before; backend false = CPU). */
  gpu: GpuInfo | null;
  readyAt: number | null;
}

/** What the gateway needs of the shared model. */
export interface ChatEngine {
  readonly modelId: string;
  status(): ModelStatus;
  /** Throws an ApiError at once when not ready (warming up / failed) or when the queue is full. */
  generate(request: GenerationRequest, sink: GenerationSink): GenerationHandle;
  /** Requests holding a slot, and waiting for one. */
  load(): { running: number; waiting: number };
  /**
   * Graceful stop, step 1: new requests get 503 shutting_down; resolves once every admitted request has finished,
   * or after `graceMs` (whatever still runs is then cut by dispose()).
   */
  drain(graceMs: number): Promise<void>;
  dispose(): Promise<void>;
}
