import { getLlama, LlamaLogLevel, type Llama, type LlamaModel } from 'node-llama-cpp';
import {
  type GpuInfo,
  INSTANT_TOKEN_BYTES,
  type ModelWorkerData,
  type NativeComputeInfo,
} from '../engine/worker-protocol.ts';
import type { ChatMessage, FunctionTool, RawPrompt } from '../protocol/chat-request.ts';
import type { NativeSlotEngine } from './native-slot-engine.ts';
import { InstantEngine } from './instant-engine.ts';
import { LlamaSequenceEngine } from './llama-sequence-engine.ts';
import { cpuKernelsDir } from './cpu-kernels-dir.ts';
import { PromptBuilder } from './prompt-builder.ts';
import { PromptTooLong } from './prompt-tokenizer.ts';
import type { SlotEngine } from './slot-engine.ts';
import type { EmbeddingTaskResult } from '../engine/embedding-task.ts';
import { InputEmbedder, instantVectors, llamaEmbeddingVectors } from './input-embedder.ts';
import { servesEmbeddingsOnly } from './model-kind.ts';

/** A part of a host being loaded: released, last loaded first, when the load fails or is aborted. */
interface Releasable {
  dispose(): Promise<unknown>;
}
/** Records a part just loaded, then throws if the load was aborted meanwhile. */
type Keep = <T extends Releasable>(part: T) => T;

/**
 * Everything one model worker holds for its whole life: the llama.cpp runtime, the model (full for the
 * node-llama-cpp engine, vocabulary-only for the native loop, none for the instant engine), the chat
 * template and the slot engine. Loaded once per worker thread; `dispose()` is idempotent.
 */
export class ModelHost {
  private disposed = false;

  private constructor(
    readonly engine: SlotEngine,
    readonly prompts: PromptBuilder | null,
    readonly fallbackReason: string | undefined,
    /** Native engine: how it computes (threads actually used, thread pool, CPU backend, calibration). */
    readonly compute: ({ threads: number } & NativeComputeInfo) | undefined,
    private readonly llama: Llama | null,
    private readonly model: LlamaModel | null,
    /** Where the model computes: the GPU backend and the layers offloaded (CPU: backend false). */
    readonly gpu?: GpuInfo,
  ) {}

  /**
   * The model is a BERT-family encoder (model-kind.ts): it serves the `embed` task only; a generation task is
   * answered with the failure `model_embeddings_only` (a 400 naming `model`) before any prompt is built.
   */
  get embeddingsOnly(): boolean {
    if (this.engine.kind === 'native') return (this.engine as unknown as NativeSlotEngine).loaded.embeddingsOnly;
    return this.model !== null && servesEmbeddingsOnly(this.model.fileInfo.metadata);
  }

  /**
   * Loads everything a worker serves with. When `signal` aborts first, the load stops as soon as llama.cpp
   * allows (a model load between its progress reports), what was loaded is released, and the promise rejects
   * with the signal's reason: a worker asked to stop never waits for, nor abandons, a long load.
   */
  static async load(data: ModelWorkerData, signal?: AbortSignal): Promise<ModelHost> {
    const loaded: Releasable[] = [];
    const keep: Keep = (part) => {
      loaded.push(part);
      signal?.throwIfAborted();
      return part;
    };
    try {
      signal?.throwIfAborted();
      return await ModelHost.loadParts(data, signal, keep);
    } catch (err) {
      for (const part of loaded.reverse()) await part.dispose().catch(() => {});
      throw err;
    }
  }

  private static async loadParts(
    data: ModelWorkerData,
    signal: AbortSignal | undefined,
    keep: Keep,
  ): Promise<ModelHost> {
    if (data.engine === 'instant')
      return new ModelHost(new InstantEngine(data.contextSize, data.slots), null, undefined, undefined, null, null);
    let fallbackReason: string | undefined;
    if (data.engine === 'native' || data.engine === 'auto') {
      const native = await tryLoadNative(data, signal);
      signal?.throwIfAborted(); // an aborted native load is no reason to fall back
      if (native.ok) {
        const e = keep(native.engine);
        // The CPU runtime: the same libllama file the addon links, so the process maps one copy.
        const llama = keep(
          await getLlama({ gpu: false, build: 'never', logLevel: LlamaLogLevel.error, progressLogs: false }),
        );
        const model = keep(
          await llama.loadModel({
            modelPath: data.modelPath,
            vocabOnly: true,
            ...(signal ? { loadSignal: signal } : {}),
          }),
        );
        const compute = {
          threads: e.loaded.threads,
          threadPool: e.loaded.threadPool,
          cpuBackend: e.loaded.cpuBackend,
          ...(e.loaded.calibration ? { calibration: [...e.loaded.calibration] } : {}),
          ...(e.loaded.calibrationStep ? { calibrationStep: { ...e.loaded.calibrationStep } } : {}),
        };
        return new ModelHost(e, new PromptBuilder(model), undefined, compute, llama, model, nativeGpuInfo(e));
      }
      if (data.engine === 'native') throw new Error(`native engine unavailable: ${native.reason}`);
      fallbackReason = native.reason;
    }
    const llama = keep(
      await getLlama({ gpu: 'auto', build: 'never', logLevel: LlamaLogLevel.error, progressLogs: false }),
    );
    const model = keep(await llama.loadModel({ modelPath: data.modelPath, ...(signal ? { loadSignal: signal } : {}) }));
    const engine = keep(
      await LlamaSequenceEngine.load({
        model,
        contextSize: data.contextSize,
        slots: data.slots,
        threads: fallbackReason ? data.fallbackThreads : data.threads,
        batchSize: data.batchSize,
        ...(signal ? { signal } : {}),
      }),
    );
    const gpu: GpuInfo = {
      backend: llama.gpu,
      devices: llama.gpu === false ? [] : await llama.getGpuDeviceNames(),
      gpuLayers: model.gpuLayers,
    };
    signal?.throwIfAborted();
    return new ModelHost(engine, new PromptBuilder(model), fallbackReason, undefined, llama, model, gpu);
  }

  /**
   * Prompt tokens and template stop strings; rejects with PromptTooLong once the prompt passes `maxTokens`.
   * The instant engine has no vocabulary: it counts INSTANT_TOKEN_BYTES bytes per token (and ignores tools).
   */
  async buildPrompt(
    messages: ChatMessage[],
    tools: FunctionTool[] | undefined,
    maxTokens: number,
    suffix = '',
  ): Promise<{ tokens: Uint32Array; stops: string[] }> {
    if (this.prompts) return this.prompts.build(messages, tools, maxTokens, suffix);
    const bytes = messages.reduce(
      (n, m) => n + Buffer.byteLength(m.content) + INSTANT_TOKEN_BYTES,
      Buffer.byteLength(suffix),
    );
    const count = Math.max(1, Math.ceil(bytes / INSTANT_TOKEN_BYTES));
    if (count > maxTokens) throw new PromptTooLong(count);
    return { tokens: new Uint32Array(count), stops: [] };
  }

  /** buildPrompt for a raw prompt (PromptBuilder.buildRaw); the instant engine counts its bytes as above. */
  async buildRawPrompt(prompt: RawPrompt, maxTokens: number): Promise<{ tokens: Uint32Array; stops: string[] }> {
    if (this.prompts) return this.prompts.buildRaw(prompt, maxTokens);
    const count =
      typeof prompt === 'string'
        ? Math.max(1, Math.ceil(Buffer.byteLength(prompt) / INSTANT_TOKEN_BYTES))
        : prompt.length;
    if (count > maxTokens) throw new PromptTooLong(count);
    return { tokens: new Uint32Array(count), stops: [] };
  }

  private embedder: InputEmbedder | undefined;

  /**
   * The `embed` task (input-embedder.ts): the native loop embeds in batches on its model (NativeSlotEngine.embed),
   * the node-llama-cpp engine one input at a time in its embedding context, the instant engine with fake vectors.
   * Text is tokenized as buildRawPrompt does (no template, BOS when the vocabulary asks: a BERT vocabulary's
   * [CLS]), with the token that ends an input after it when the vocabulary asks for one (inputEndToken).
   */
  embed(inputs: RawPrompt[], cancelled?: () => boolean): Promise<EmbeddingTaskResult> {
    this.embedder ??= this.createEmbedder();
    return this.embedder.embed(inputs, cancelled);
  }

  private createEmbedder(): InputEmbedder {
    const engine = this.engine;
    const model = this.model;
    const closing = model ? inputEndToken(model) : null;
    const tokenize = async (input: RawPrompt, maxTokens: number): Promise<Uint32Array> => {
      const eos = typeof input === 'string' ? closing : null;
      const { tokens } = await this.buildRawPrompt(input, eos === null ? maxTokens : maxTokens - 1);
      return eos === null ? tokens : Uint32Array.from([...tokens, eos]);
    };
    if (engine.kind === 'native')
      return new InputEmbedder(engine.contextSize, tokenize, (tokens) =>
        (engine as unknown as NativeSlotEngine).embed(tokens),
      );
    if (engine.kind === 'node-llama-cpp' && model)
      return new InputEmbedder(
        engine.contextSize,
        tokenize,
        llamaEmbeddingVectors(model, engine.contextSize, (engine as LlamaSequenceEngine).threads),
      );
    return new InputEmbedder(engine.contextSize, tokenize, instantVectors);
  }

  async dispose(): Promise<void> {
    if (this.disposed) return;
    this.disposed = true;
    await this.engine.dispose();
    await this.model?.dispose();
    await this.llama?.dispose();
  }
}

/**
 * The token llama.cpp puts after a text it tokenizes with special tokens: EOS where the vocabulary adds it, else a
 * WordPiece (BERT) vocabulary's [SEP] unless its GGUF says `tokenizer.ggml.add_sep_token = false` (llama.cpp adds
 * it by default for WordPiece); null for neither. BERT-family embedding models were trained on [CLS] text [SEP].
 */
function inputEndToken(model: LlamaModel): number | null {
  if (model.tokens.shouldAppendEosToken && model.tokens.eos !== null) return model.tokens.eos;
  const addSep = (model.fileInfo.metadata as { tokenizer?: { ggml?: { add_sep_token?: unknown } } }).tokenizer?.ggml
    ?.add_sep_token;
  return model.vocabularyType === 'wpm' && addSep !== false ? model.tokens.sep : null;
}

async function tryLoadNative(
  data: ModelWorkerData,
  signal: AbortSignal | undefined,
): Promise<{ ok: true; engine: NativeSlotEngine } | { ok: false; reason: string }> {
  try {
    const mod = await import('./native-slot-engine.ts');
    const available = mod.nativeAddonAvailable();
    if (!available.ok) return { ok: false, reason: available.reason };
    const backendDir = cpuKernelsDir(data.cpuKernels);
    const engine = await mod.loadNativeSlotEngineInternal(
      {
        modelPath: data.modelPath,
        contextSize: data.contextSize,
        slots: data.slots,
        threads: data.threads,
        batchSize: data.batchSize,
        ...data.native, // as the config resolved it
        calibrateCores: data.calibrateCores,
        ...(backendDir ? { backendDir } : {}),
        ...(data.gpu ? { gpuBackend: data.gpu.library, gpuLayers: data.gpu.layers } : {}),
      },
      signal,
    );
    return { ok: true, engine };
  } catch (err) {
    return { ok: false, reason: err instanceof Error ? err.message : String(err) };
  }
}

/** The native loop's GPU offload as /health and "model ready" report it (CPU: backend false). */
function nativeGpuInfo(e: NativeSlotEngine): GpuInfo {
  const d = e.loaded.gpuDevices[0];
  if (!d || e.loaded.gpuLayers === 0) return { backend: false, devices: [], gpuLayers: 0 };
  return {
    backend: 'cuda',
    devices: [d.description || d.name],
    gpuLayers: e.loaded.gpuLayers,
    memory: { freeBytes: d.memoryFreeBytes, totalBytes: d.memoryTotalBytes },
  };
}
