import type { GpuInfo } from '../engine/worker-protocol.ts';
import type {
  ChatEngine,
  GenerationHandle,
  GenerationRequest,
  GenerationSchedule,
  GenerationSink,
} from '../engine/generation.ts';
import { effectivePriority } from '../protocol/priority.ts';
import type { EmbeddingResult } from '../engine/embedding.ts';
import type { EmbeddingsRequest } from '../protocol/embeddings-request.ts';
import { invalidRequest, modelNotFound, unsupportedParameter } from '../errors/index.ts';
import type { ChatDeltaSink, TokenLogprob } from '../protocol/chat-delta.ts';
import {
  type ReasoningSyntax,
  ReasoningSplitter,
  type SplitPiece,
  thinkingOffText,
} from '../protocol/reasoning-split.ts';
import type { ReasoningEffort } from '../protocol/chat-request.ts';
import { samplingOptionsOf, type ChatRequest, type RawPrompt } from '../protocol/chat-request.ts';
import type { CompletionsRequest } from '../protocol/completions-request.ts';
import type { ChoiceDelta } from '../protocol/text-completion.ts';
import { GrammarCache } from '../grammar/grammar-cache.ts';
import type { ModelList } from '../protocol/openai-types.ts';
import { ToolCallStreamParser } from '../protocol/tool-call-parser.ts';
import { planChatGeneration } from './chat-generation-plan.ts';
import { cachePartitionOf, type InferenceCaller, type PromptCacheScope } from './prompt-cache-scope.ts';
import type { ServingStats } from './serving-stats.ts';
import { type ModelLease, type ModelListing, ModelRegistry, type RegistryModelView } from '../engine/model-registry.ts';
import { createMetrics } from '../metrics/metrics.ts';
import { SERVE_LOCAL_HINT } from '../engine/model-source.ts';
import { silentLogger } from '../log/logger.ts';

export interface SharedModelGatewayOptions {
  /** Who shares prompt-cache state (prompt-cache-scope.ts). Defaults to 'account'. */
  promptCacheScope?: PromptCacheScope;
}

export const DEFAULT_SHARED_MODEL_GATEWAY_OPTIONS = {
  promptCacheScope: 'account',
} satisfies Required<SharedModelGatewayOptions>;

/**
 * Routes validated shared-endpoint requests to the engine of the model they name (the model registry:
 * model-registry.ts). Knows model ids and the served models' public description; knows nothing of HTTP.
 * A route acquires the request's model first (acquire(): loaded on demand, held until the answer ends), then
 * starts it here on that lease: the lease's engine serves it and records its usage (the model is looked up once).
 */
export class SharedModelGateway {
  private readonly models: ModelRegistry;
  /** The default model (the first configured): GET /health and the serving stats speak of it. */
  private readonly primaryId: string;
  private readonly created: number;
  /** Grammars of schemas and tool lists seen recently (LRU). */
  private readonly grammars = new GrammarCache();
  private readonly promptCacheScope: PromptCacheScope;

  /**
   * `models`: the registry, or one engine already started (served alone, never unloaded). `stats`, when given,
   * records every generation's figures for GET /api/v1/stats.
   */
  constructor(
    models: ModelRegistry | ChatEngine,
    private readonly stats?: ServingStats,
    options: SharedModelGatewayOptions = {},
  ) {
    this.created = Math.floor(Date.now() / 1000);
    this.promptCacheScope = options.promptCacheScope ?? DEFAULT_SHARED_MODEL_GATEWAY_OPTIONS.promptCacheScope;
    if (models instanceof ModelRegistry) this.models = models;
    else {
      this.models = new ModelRegistry(
        {
          loadWaitMs: 0,
          maxLoaded: 0,
          memoryBudgetBytes: Infinity,
          idleUnloadMs: 0,
          workers: 1,
          slots: 1,
          contextSize: 1,
          modelsDir: '',
        },
        () => {
          throw new Error('a gateway of one engine loads nothing');
        },
        createMetrics(),
        silentLogger,
      );
      this.models.attach(models);
    }
    const [first] = this.models.ids();
    if (first === undefined) throw new Error('the gateway needs at least one model');
    this.primaryId = first;
  }

  /** The default model's id (the first configured). */
  get modelId(): string {
    return this.primaryId;
  }

  /**
   * Holds the model `id` for one request: loaded on demand (waiting up to --load-wait-ms), not unloaded until the
   * lease is released. 404 model_not_found for an unknown id, 503 model_warming_up past the wait.
   */
  acquire(id: string): Promise<ModelLease> {
    return this.models.acquire(id);
  }

  /**
   * Starts a generation whose events reach `out` as ChatDeltas: reasoning (when the model's template marks
   * thinking: reasoning-split.ts), content (with logprobs when asked for),
   * tool-call fragments parsed from the text when tools are active, then one finish with usage
   * (`tool_calls` when calls were parsed). Runs on the engine's push path: no promise per token. The prompt
   * reuses cached state only of `caller`'s cache partition (its account, by default: prompt-cache-scope.ts).
   * Throws before anything is sent: a schema the grammar converter refuses (400), model_warming_up (503),
   * queue_full (503).
   */
  startChat(model: ModelLease, request: ChatRequest, out: ChatDeltaSink, caller: InferenceCaller): GenerationHandle {
    const engine = model.engine;
    const plan = planChatGeneration(request, this.grammars);
    const parser = plan.toolNames === null ? null : new ToolCallStreamParser(plan.toolNames);
    const content = (text: string, logprobs: TokenLogprob[] | undefined) => {
      if (parser === null) out.push({ type: 'content', text, logprobs });
      else for (const d of parser.push(text, logprobs)) out.push(d);
    };
    // Thinking is split out before tool calls are parsed; a grammar-constrained reply has none.
    const reasoning = engine.status().metadata?.reasoning ?? null;
    const promptSuffix = thinkingSwitch(request.reasoningEffort, reasoning);
    const syntax = plan.generation.grammar === undefined ? reasoning : null;
    const splitter = syntax === null ? null : new ReasoningSplitter(syntax);
    const split = (pieces: SplitPiece[], logprobs: TokenLogprob[] | undefined) => {
      for (const piece of pieces) {
        if (piece.kind === 'reasoning') out.push({ type: 'reasoning', text: piece.text });
        else {
          content(piece.text, logprobs);
          logprobs = undefined; // a token's logprobs go with the first answer text it produced
        }
      }
    };
    const sink: GenerationSink = {
      onText: (text, logprobs) => {
        if (splitter === null) content(text, logprobs);
        else split(splitter.push(text), logprobs);
      },
      onDone: (r) => {
        model.recordUsage(r.completionTokens);
        if (splitter !== null) split(splitter.end(), undefined);
        if (parser !== null) for (const d of parser.end()) out.push(d);
        const reason =
          parser !== null && parser.callCount > 0 && r.finishReason === 'stop' ? 'tool_calls' : r.finishReason;
        const stopSequence =
          reason === 'stop' && r.stop !== undefined && request.stop.includes(r.stop) ? r.stop : undefined;
        out.push({
          type: 'finish',
          reason,
          usage: { promptTokens: r.promptTokens, completionTokens: r.completionTokens, cachedTokens: r.cachedTokens },
          stopSequence,
        });
      },
      onError: (e) => out.fail(e),
    };
    const generation = {
      ...plan.generation,
      promptSuffix,
      cachePartition: cachePartitionOf(this.promptCacheScope, caller),
      schedule: scheduleOf(caller, request.priority),
    };
    return engine.generate(generation, this.stats ? this.stats.observe(sink) : sink);
  }

  /**
   * Legacy completions: one generation per prompt, each prompt sent raw (no chat template), started at once
   * (each takes a slot or a queue place). Their deltas reach `out` tagged with their choice (ChoiceTag): content,
   * then an empty content delta with `end` when that prompt's generation ends; after the last one, one
   * `finish` with the usage summed over all (its reason: the first choice's). A failure of any cancels the
   * others and fails `out`. Throws before anything is sent as startChat does (a refused later prompt cancels
   * the ones already started).
   */
  startCompletions(
    model: ModelLease,
    request: CompletionsRequest,
    out: ChatDeltaSink,
    caller: InferenceCaller,
  ): GenerationHandle {
    const engine = model.engine;
    const handles: GenerationHandle[] = [];
    const cancelAll = () => {
      for (const h of handles) h.cancel();
    };
    const reasons: Array<'stop' | 'length' | null> = request.prompts.map(() => null);
    const usage = { promptTokens: 0, completionTokens: 0, cachedTokens: 0 };
    let open = request.prompts.length;
    let failed = false;
    const cachePartition = cachePartitionOf(this.promptCacheScope, caller);
    const schedule = scheduleOf(caller, request.priority);
    const generation = (prompt: RawPrompt): GenerationRequest => ({
      messages: [],
      prompt,
      cachePartition,
      schedule,
      topLogprobs: request.logprobs,
      ...samplingOptionsOf(request),
    });
    try {
      request.prompts.forEach((prompt, choice) => {
        const sink: GenerationSink = {
          onText: (text, logprobs) => {
            if (failed) return;
            const d: ChoiceDelta = { type: 'content', text, logprobs, choice };
            out.push(d);
          },
          onDone: (r) => {
            if (failed) return;
            model.recordUsage(r.completionTokens);
            reasons[choice] = r.finishReason;
            usage.promptTokens += r.promptTokens;
            usage.completionTokens += r.completionTokens;
            usage.cachedTokens += r.cachedTokens;
            const end: ChoiceDelta = { type: 'content', text: '', choice, end: r.finishReason };
            out.push(end);
            if (--open === 0) out.push({ type: 'finish', reason: reasons[0] ?? 'stop', usage });
          },
          onError: (e) => {
            if (failed) return;
            failed = true;
            cancelAll();
            out.fail(e);
          },
        };
        handles.push(engine.generate(generation(prompt), this.stats ? this.stats.observe(sink) : sink));
      });
    } catch (err) {
      failed = true;
      cancelAll();
      throw err;
    }
    return { cancel: cancelAll };
  }

  /**
   * The prompt's token count for `request` as startChat would send it (template, system, tools), without
   * generating: the Messages API's count_tokens. Throws (or rejects) as startChat does.
   */
  countTokens(model: ModelLease, request: ChatRequest): Promise<number> {
    const engine = model.engine;
    const toolsActive = request.tools.length > 0 && request.toolChoice !== 'none';
    return new Promise((resolve, reject) => {
      engine.generate(
        // No slot is taken and no cache consulted: the partition is irrelevant.
        {
          messages: request.messages,
          tools: toolsActive ? request.tools : undefined,
          stop: [],
          countOnly: true,
          cachePartition: '',
        },
        { onText: () => {}, onDone: (r) => resolve(r.promptTokens), onError: reject },
      );
    });
  }

  /**
   * The embeddings of a validated request's inputs (unit vectors, in order) and their token count. Rejects with
   * a 400 naming `model` when the engine serves no embeddings,
   * and as the engine's embed() does (EmbeddingEngine). Scheduled as a generation of `caller` would be (its
   * account's share, its key's priority; the Batch API's caller is at `batch`); `signal` aborts once its client left.
   */
  async embed(
    model: ModelLease,
    request: EmbeddingsRequest,
    caller: InferenceCaller,
    signal?: AbortSignal,
  ): Promise<EmbeddingResult> {
    const engine = model.engine;
    if (engine.embed === undefined)
      throw invalidRequest(`The model '${request.model}' serves no embeddings`, 'model', 'model_not_supported');
    return engine.embed(request.inputs, scheduleOf(caller, undefined), signal);
  }

  /** GET /models/{id} as JSON text; model_not_found (404) for an id the server does not serve. */
  modelBody(id: string): string {
    return JSON.stringify(this.modelObject(this.models.view(id)));
  }

  private modelsCache: { key: string; body: string } | null = null;

  /** GET /models as JSON text, rendered again only when a model's state changes. */
  modelsBody(): string {
    const listing = this.models.listing();
    const key = listing
      .map((v) => `${v.id} ${v.state} ${v.status?.engine} ${v.status?.contextSize} ${v.status?.workersReady}`)
      .join('|');
    if (this.modelsCache?.key !== key) this.modelsCache = { key, body: JSON.stringify(this.listFrom(listing)) };
    return this.modelsCache.body;
  }

  listModels(): ModelList {
    return this.listFrom(this.models.listing());
  }

  private listFrom(listing: ModelListing[]): ModelList {
    return { object: 'list', data: listing.map((v) => this.modelObject(v)) };
  }

  /** One model as OpenAI lists it, with Hearth's own fields under `hearth` (state: unloaded, pulling, loading, ready, failed). */
  private modelObject(v: ModelListing): ModelList['data'][number] {
    const s = v.status;
    const [namespace] = v.id.split('/');
    return {
      id: v.id,
      object: 'model',
      created: this.created,
      owned_by: namespace ?? 'local',
      hearth: {
        state: v.state,
        context_length: s?.contextSize ?? null,
        train_context_length: s?.metadata?.contextLength ?? null,
        architecture: s?.metadata?.architecture ?? null,
        parameter_count: s?.metadata?.parameterCount ?? null,
        quantization: s?.metadata?.quantization ?? null,
        chat_template: s?.metadata?.hasChatTemplate ?? null,
        engine: v.state === 'unloaded' ? null : (s?.engine ?? null),
        slots: s ? s.workers * s.slots : null,
      },
    };
  }

  /** Every model's registry view (the admin API and the dashboard's Models page). */
  modelViews(): RegistryModelView[] {
    return this.models.views();
  }

  /** Body and status of GET /health: 200 when ready, 503 while warming up or failed. */
  health(): { status: number; body: Record<string, unknown> } {
    const face = this.models.face(this.primaryId);
    const s = face.status();
    const load = face.load();
    const body: Record<string, unknown> = {
      ok: s.state === 'ready',
      state: s.state,
      model: s.modelId,
      engine: s.engine === null ? null : engineView(s.engine, s.gpu),
      workers: { ready: s.workersReady, total: s.workers },
      requests: load,
    };
    if (s.pull)
      body.pull = {
        downloaded_bytes: s.pull.downloadedBytes,
        total_bytes: s.pull.totalBytes,
        percent: Math.round(s.pull.ratio * 1000) / 10,
      };
    if (s.state === 'failed') {
      body.error = s.error;
      body.hint =
        this.models.view(this.primaryId).source.kind === 'hub'
          ? `The pull failed: ${SERVE_LOCAL_HINT}`
          : 'The local file did not load: check that it is a llama.cpp GGUF model, then restart (npm start -- --model path/to/model.gguf)';
    }
    if (s.state === 'pulling' || s.state === 'loading') body.retry_after_seconds = 120;
    const views = this.models.views();
    if (views.length > 1) body.models = views.map((v) => ({ id: v.id, state: v.state }));
    // A default model unloaded as idle serves again on the next request: the server is healthy.
    const serving = s.state === 'ready' || s.state === 'unloaded';
    if (s.state === 'unloaded') body.ok = true;
    return { status: serving ? 200 : 503, body };
  }
}

/** /health's engine: which token engine, and where it computes (contract.md "GPU"). */
function engineView(kind: string, gpu: GpuInfo | null): Record<string, unknown> {
  const view: Record<string, unknown> = {
    kind,
    backend: gpu?.backend || 'cpu',
    devices: gpu?.devices ?? [],
    gpuLayers: gpu?.gpuLayers ?? 0,
  };
  if (gpu?.memory)
    view.vram = { used_bytes: gpu.memory.totalBytes - gpu.memory.freeBytes, total_bytes: gpu.memory.totalBytes };
  return view;
}

/**
 * The prompt suffix of a request's reasoning effort: '' to leave the model as it is (no effort, or low / medium /
 * high), the empty thinking block for `none` / `minimal`. A 400 naming `reasoning_effort` when the model's
 * template has no thinking switch (contract: refused where the template has none).
 */
function thinkingSwitch(effort: ReasoningEffort | undefined, syntax: ReasoningSyntax | null): string {
  if (effort === undefined) return '';
  if (syntax === null || !syntax.switchable)
    throw unsupportedParameter(
      'reasoning_effort',
      "is not supported: this model's chat template has no thinking switch",
    );
  return effort === 'none' || effort === 'minimal' ? thinkingOffText(syntax) : '';
}

/** Where a caller's generation is scheduled: its account's share, at its key's priority or lower when the request asked. */
function scheduleOf(caller: InferenceCaller, requested: 'batch' | undefined): GenerationSchedule {
  return { tenant: caller.accountId, priority: effectivePriority(caller.priority, requested) };
}
