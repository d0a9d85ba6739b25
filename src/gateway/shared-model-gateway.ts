import type { ChatEngine, GenerationHandle, GenerationSink } from '../engine/generation.ts';
import { modelNotFound } from '../errors/index.ts';
import type { ChatDeltaSink } from '../protocol/chat-delta.ts';
import type { ChatRequest } from '../protocol/chat-request.ts';
import type { ModelList } from '../protocol/openai-types.ts';
import type { ServingStats } from './serving-stats.ts';

/**
 * Routes validated shared-endpoint requests to the local engine. Knows model ids and the served
 * model's public description; knows nothing of HTTP.
 */
export class SharedModelGateway {
  private readonly created: number;

  /** `stats`, when given, records every generation's figures for GET /api/v1/stats. */
  constructor(
    private readonly engine: ChatEngine,
    private readonly stats?: ServingStats,
  ) {
    this.created = Math.floor(Date.now() / 1000);
  }

  get modelId(): string {
    return this.engine.modelId;
  }

  /**
   * Starts a generation whose events reach `out` as ChatDeltas (content, then one finish with usage), on the
   * engine's push path: no promise per token. Throws model_not_found (404), model_warming_up (503),
   * queue_full (503) before anything is sent.
   */
  startChat(request: ChatRequest, out: ChatDeltaSink): GenerationHandle {
    if (request.model !== this.engine.modelId) throw modelNotFound(request.model);
    const sink: GenerationSink = {
      onText: (text, logprobs) => out.push({ type: 'content', text, logprobs }),
      onDone: (r) => out.push({ type: 'finish', reason: r.finishReason, usage: { promptTokens: r.promptTokens, completionTokens: r.completionTokens, cachedTokens: r.cachedTokens } }),
      onError: (e) => out.fail(e),
    };
    return this.engine.generate(
      {
        messages: request.messages,
        maxTokens: request.maxTokens,
        stop: request.stop,
        temperature: request.temperature,
        topP: request.topP,
        seed: request.seed,
        presencePenalty: request.presencePenalty,
        frequencyPenalty: request.frequencyPenalty,
      },
      this.stats ? this.stats.observe(sink) : sink,
    );
  }

  private modelsCache: { key: string; body: string } | null = null;

  /** GET /models as JSON text, rendered again only when the model's state changes. */
  modelsBody(): string {
    const s = this.engine.status();
    const key = `${s.state} ${s.engine} ${s.contextSize} ${s.workersReady}`;
    if (this.modelsCache?.key !== key) this.modelsCache = { key, body: JSON.stringify(this.listModels()) };
    return this.modelsCache.body;
  }

  listModels(): ModelList {
    const s = this.engine.status();
    const [namespace] = this.engine.modelId.split('/');
    return {
      object: 'list',
      data: [
        {
          id: this.engine.modelId,
          object: 'model',
          created: this.created,
          owned_by: namespace ?? 'local',
          hearth: {
            state: s.state,
            context_length: s.contextSize,
            train_context_length: s.metadata?.contextLength ?? null,
            architecture: s.metadata?.architecture ?? null,
            parameter_count: s.metadata?.parameterCount ?? null,
            quantization: s.metadata?.quantization ?? null,
            chat_template: s.metadata?.hasChatTemplate ?? null,
            engine: s.engine,
            slots: s.workers * s.slots,
          },
        },
      ],
    };
  }

  /** Body and status of GET /health: 200 when ready, 503 while warming up or failed. */
  health(): { status: number; body: Record<string, unknown> } {
    const s = this.engine.status();
    const load = this.engine.load();
    const body: Record<string, unknown> = {
      ok: s.state === 'ready',
      state: s.state,
      model: s.modelId,
      engine: s.engine,
      workers: { ready: s.workersReady, total: s.workers },
      requests: load,
    };
    if (s.pull) body.pull = { downloaded_bytes: s.pull.downloadedBytes, total_bytes: s.pull.totalBytes, percent: Math.round(s.pull.ratio * 1000) / 10 };
    if (s.state === 'failed') {
      body.error = s.error;
      body.hint = 'Serve a local GGUF instead: hearth serve --model path/to/model.gguf';
    }
    if (s.state === 'pulling' || s.state === 'loading') body.retry_after_seconds = 120;
    return { status: s.state === 'ready' ? 200 : 503, body };
  }
}
