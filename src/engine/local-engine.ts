import { engineFailure } from '../errors/engine-failure.ts';
import {
  clientClosedRequest,
  contextLengthExceeded,
  invalidRequest,
  modelFailed,
  modelWarmingUp,
  shuttingDown,
} from '../errors/errors.ts';
import { toApiError } from '../errors/to-api-error.ts';
import { waitFor } from '../lifecycle/wait-for.ts';
import type { Logger } from '../log/logger.ts';
import type { Metrics } from '../metrics/metrics.ts';
import type { RawPrompt } from '../protocol/chat-request.ts';
import { reasoningSyntaxOf } from '../protocol/reasoning-split.ts';
import { Admission } from './admission.ts';
import { chooseKernels, DEFAULT_SLOTS, gpuSlots, placeOnGpu } from './compute-placement.ts';
import type { EmbeddingEngine, EmbeddingResult } from './embedding.ts';
import type { EmbeddingTaskResult } from './embedding-task.ts';
import {
  type ChatEngine,
  DEFAULT_SCHEDULE,
  type GenerationHandle,
  type GenerationRequest,
  type GenerationSchedule,
  type GenerationSink,
  type ModelStatus,
} from './generation.ts';
import { MainEventRelay } from './main-event-relay.ts';
import { readModelMetadata } from './model-metadata.ts';
import { ModelPullAborted, ModelPullError, pullModelLogged } from './model-source.ts';
import { ModelWorkerPool, type WorkerPoolListener } from './model-worker-pool.ts';
import { promptTokensAtLeast, rawPromptTokensAtLeast } from './prompt-bound.ts';
import { type GenerationHost, startPooledGeneration } from './pooled-generation.ts';
import { calibrationCores, planThreads } from './thread-plan.ts';
import type { LocalEngineOptions } from './local-engine-options.ts';
import { WorkerReports } from './worker-reports.ts';
import { INSTANT_TOKEN_BYTES, type ModelWorkerData } from './worker-protocol.ts';

export type { LocalEngineOptions } from './local-engine-options.ts';

/**
 * dispose() waits at most this long (by default) for the cut generations to end and the workers to stop
 * (WorkerStop): a 2-worker load on a busy 2-core machine took over 4 s. Within the CLI's shutdown bound
 * (serve-command.ts SHUTDOWN_BOUND_MS, after the apps' 5 s stop time-out).
 */
const WORKER_STOP_TIMEOUT_MS = 8_000;

/**
 * The main-thread face of local inference: pulls and checks the model, places it (compute-placement.ts), owns its
 * worker pool (model-worker-pool.ts), admits requests (admission.ts) and runs each generation on the pool
 * (pooled-generation.ts: its events relayed to its sink and metered) and each embedding.
 * Single owner: the model registry (or main.ts); `dispose()` is idempotent.
 */
export class LocalEngine implements ChatEngine, EmbeddingEngine {
  readonly modelId: string;
  private pool: ModelWorkerPool | null = null;
  /** Native engine: relayed tasks' events arrive here from the loop threads (null: ports only). */
  private relay: MainEventRelay | null = null;
  private readonly st: ModelStatus;
  private readonly admission: Admission;
  private readonly reports: WorkerReports;
  /** Set when the pull failed because the hub could not be resolved or reached: the reason chat calls are told. */
  private unreachable: string | undefined;
  private disposed = false;
  /** dispose()'s one run: every call resolves when it has finished. */
  private disposing: Promise<void> | null = null;
  private draining = false;
  /** Aborted by dispose(): stops a pull or a load in progress (shutdown in any model state). */
  private readonly startup = new AbortController();
  /** Most bytes of text one token covers (the vocabulary's longest piece); null: no bound known. */
  private maxTokenBytes: number | null = null;
  /** Settles start()'s wait for the workers (ready, failed, or disposed meanwhile). */
  private settleStart: () => void = () => {};
  /** One per generation in flight: asks its worker to stop it (its sink then ends with shutting_down). */
  private readonly cuts = new Set<() => void>();
  private readonly labels: { model: string };
  /** What each generation reads of this engine (pooled-generation.ts), less the pool it is handed. */
  private readonly generationHost: Omit<GenerationHost, 'pool'>;

  constructor(
    private readonly o: LocalEngineOptions,
    private readonly metrics: Metrics,
    private readonly log: Logger,
  ) {
    this.modelId = o.source.modelId;
    this.labels = { model: this.modelId };
    this.st = {
      state: o.source.kind === 'hub' ? 'pulling' : 'loading',
      modelId: this.modelId,
      pull: null,
      workersReady: 0,
      workers: o.workers,
      engine: null,
      error: null,
      metadata: null,
      contextSize: null,
      slots: o.slots ?? DEFAULT_SLOTS,
      threads: planThreads({ cores: o.cores, workers: o.workers, engine: o.engine, requested: o.threads }),
      gpu: null,
      readyAt: null,
    };
    this.setState(this.st.state);
    this.admission = new Admission(
      {
        slots: () => this.o.workers * this.st.slots,
        queueLimit: o.queueLimit,
        preempts: () => this.st.engine === 'native',
        sharesSlots: () => this.st.engine === 'native' && this.o.workers === 1,
      },
      metrics,
      this.labels,
    );
    for (const priority of ['interactive', 'batch'] as const)
      metrics.generatedTokensByPriority.inc({ ...this.labels, priority }, 0);
    this.reports = new WorkerReports(metrics, this.labels, (parked) => this.admission.setParked(parked));
    this.generationHost = {
      admission: this.admission,
      relay: () => this.relay,
      cuts: this.cuts,
      metrics,
      labels: this.labels,
      maxTokens: o.maxTokens,
      disposed: () => this.disposed,
      stopping: () => this.disposed || this.draining,
    };
  }

  status(): ModelStatus {
    return { ...this.st, pull: this.st.pull && { ...this.st.pull } };
  }

  load(): { running: number; waiting: number } {
    return this.admission.load();
  }

  private setState(state: ModelStatus['state']): void {
    this.st.state = state;
    for (const s of ['unloaded', 'pulling', 'loading', 'ready', 'failed'])
      this.metrics.modelState.set({ ...this.labels, state: s }, s === state ? 1 : 0);
  }

  private fail(reason: string): void {
    this.st.error = reason;
    this.setState('failed');
    this.log.error('model failed', { model: this.modelId, reason });
  }

  async start(): Promise<void> {
    try {
      let modelPath: string;
      if (this.o.source.kind === 'hub') {
        const pull = {
          modelsDir: this.o.modelsDir,
          signal: this.startup.signal,
          showCliProgress: this.o.showPullProgress,
          stallTimeoutMs: this.o.pullStallTimeoutMs,
        };
        modelPath = await pullModelLogged(this.o.source, pull, this.log, (progress) => {
          this.st.pull = progress;
          this.metrics.modelPullProgress.set(this.labels, progress.ratio);
        });
        this.setState('loading');
      } else {
        modelPath = this.o.source.path;
      }
      this.metrics.modelPullProgress.set(this.labels, 1);
      const md = await readModelMetadata(modelPath);
      this.st.metadata = {
        architecture: md.architecture,
        contextLength: md.contextLength,
        parameterCount: md.parameterCount,
        quantization: md.quantization,
        hasChatTemplate: md.chatTemplate !== null,
        reasoning: reasoningSyntaxOf(md.chatTemplate),
      };
      // The instant test engine has no model limits: its context is what the operator asked for.
      const contextSize =
        this.o.engine === 'instant'
          ? this.o.contextSize
          : Math.min(this.o.contextSize, md.contextLength ?? this.o.contextSize);
      this.st.contextSize = contextSize;
      this.maxTokenBytes = this.o.engine === 'instant' ? INSTANT_TOKEN_BYTES : md.maxTokenBytes;
      // The GPU is probed and the kernels are timed (auto) before the workers start: backends are process-wide.
      const gpu = await placeOnGpu(this.o, this.modelId, modelPath, this.log, this.startup.signal);
      if (gpu?.probe && this.o.slots === undefined)
        this.st.slots = gpuSlots(gpu.probe.device.memoryFreeBytes, contextSize, md.kvBytesPerToken, this.o.workers);
      const kernels = await chooseKernels(this.o, this.modelId, modelPath, this.st, this.log, this.startup.signal);
      this.log.info('loading model', {
        model: this.modelId,
        path: modelPath,
        ...this.st.metadata,
        contextSize,
        workers: this.o.workers,
        slots: this.st.slots,
        threads: this.st.threads,
        ...(kernels ? { cpuKernels: kernels.kernels } : {}),
        ...(gpu?.library ? { gpuLayers: gpu.layers, gpuBackend: gpu.library } : {}),
      });
      if (this.disposed) return;
      await this.startPool({
        engine: this.o.engine,
        modelPath,
        contextSize,
        slots: this.st.slots,
        threads: this.st.threads,
        fallbackThreads: planThreads({
          cores: this.o.cores,
          workers: this.o.workers,
          engine: 'node-llama-cpp',
          requested: this.o.threads,
        }),
        batchSize: this.o.batchSize,
        native: this.o.native,
        // On a GPU the CPU threads only sample and feed it: no thread calibration (it would time GPU steps).
        calibrateCores: gpu?.library
          ? 0
          : calibrationCores({
              cores: this.o.cores,
              workers: this.o.workers,
              engine: this.o.engine,
              requested: this.o.threads,
            }),
        cpuKernels: kernels?.kernels ?? 'prebuilt',
        ...(gpu?.library ? { gpu: { library: gpu.library, layers: gpu.layers } } : {}),
      });
    } catch (err) {
      if (this.disposed || err instanceof ModelPullAborted) {
        this.log.info('model start abandoned: shutting down', { model: this.modelId, state: this.st.state });
        return;
      }
      if (err instanceof ModelPullError) this.unreachable = err.unreachable;
      this.fail(err instanceof Error ? err.message : String(err));
    }
  }

  /** Starts the workers; resolves once all loaded the model, one failed, or dispose() came first. */
  private startPool(workerData: Omit<ModelWorkerData, 'stopChannel'>): Promise<void> {
    if ((workerData.engine === 'native' || workerData.engine === 'auto') && this.o.openRelay) {
      this.relay = MainEventRelay.open(this.o.openRelay, (err) =>
        this.log.error('generation event handler failed', { error: err instanceof Error ? err.message : String(err) }),
      );
    }
    return new Promise((resolve) => {
      this.settleStart = resolve;
      const listener: WorkerPoolListener = {
        ready: (m) => {
          if (this.disposed) return;
          this.st.workersReady++;
          if (m.engine === 'native')
            this.metrics.promptCacheCapacity.inc(this.labels, this.o.native.promptCacheMiB * (1 << 20));
          this.st.engine = m.engine;
          this.st.contextSize = m.contextSize;
          this.st.threads = m.threads;
          this.st.gpu = m.gpu ?? { backend: false, devices: [], gpuLayers: 0 };
          this.metrics.gpuLayers.set(this.labels, this.st.gpu.gpuLayers);
          if (m.fallbackReason)
            this.log.warn('native engine unavailable; using node-llama-cpp sequences', { reason: m.fallbackReason });
          if (this.st.workersReady === this.o.workers && this.st.state === 'loading') {
            this.st.readyAt = Date.now();
            this.setState('ready');
            this.log.info('model ready', {
              model: this.modelId,
              engine: m.engine,
              workers: this.o.workers,
              slots: this.st.slots,
              threads: m.threads,
              contextSize: m.contextSize,
              ...m.compute,
              ...(m.gpu ? { gpu: m.gpu } : {}),
            });
            resolve();
          }
        },
        loadFailed: (reason) => {
          if (this.disposed) return;
          this.fail(`a model worker could not load the model: ${reason}`);
          resolve();
        },
        workerError: (err) => {
          if (this.disposed) return;
          this.log.error('model worker error', { error: err.message });
          if (this.st.state === 'loading') {
            this.fail(err.message);
            resolve();
          }
        },
        report: (m) => {
          if (!this.disposed) this.reports.record(m);
        },
      };
      this.pool = new ModelWorkerPool(
        { workers: this.o.workers, slots: this.st.slots, queueLimit: this.o.queueLimit, workerData },
        listener,
        this.log,
      );
    });
  }

  /** The worker pool, or a throw unless the model serves: shutting down (503), failed, still pulling or loading (503 model_warming_up). */
  private servingPool(): ModelWorkerPool {
    if (this.disposed || this.draining) throw shuttingDown();
    if (this.st.state === 'failed') throw modelFailed(this.unreachable);
    if (this.st.state !== 'ready' || !this.pool) {
      throw modelWarmingUp({
        state: this.st.state,
        progress: this.st.pull ? Math.round(this.st.pull.ratio * 1000) / 10 : null,
        workers_ready: this.st.workersReady,
        workers: this.st.workers,
      });
    }
    return this.pool;
  }

  /**
   * Starts a generation: refused at once (throws) when the model does not serve, the prompt cannot fit (from its
   * bytes, before it takes a queue place or a worker's time) or the queue is full; else queued for the pool.
   */
  generate(request: GenerationRequest, sink: GenerationSink): GenerationHandle {
    const pool = this.servingPool();
    const contextSize = this.st.contextSize;
    if (this.maxTokenBytes !== null && contextSize !== null) {
      const atLeast =
        request.prompt === undefined
          ? promptTokensAtLeast(request.messages, this.maxTokenBytes)
          : rawPromptTokensAtLeast(request.prompt, this.maxTokenBytes);
      if (atLeast + 1 > contextSize) throw contextLengthExceeded(atLeast, contextSize, true);
    }
    return startPooledGeneration({ ...this.generationHost, pool }, request, sink);
  }

  /**
   * The inputs' embeddings: one `embed` task on a model worker (Piscina's named task), which tokenizes them and
   * computes their vectors (batched by the native loop). Admitted as a generation is (503 while warming up,
   * failed, shutting down, or with the queue full) and counted as one running request while it runs; an input
   * that cannot fit the context is refused here from its bytes, or by the worker once tokenized: a 400 naming
   * `input[i]`. No generation metrics are recorded. Once `signal` aborts (the client left), a waiting request
   * leaves the queue at once and a running one at the worker's next call (input-embedder.ts: about 250 ms),
   * rejecting with client_closed_request.
   */
  async embed(
    inputs: readonly RawPrompt[],
    schedule: GenerationSchedule = DEFAULT_SCHEDULE,
    signal?: AbortSignal,
  ): Promise<EmbeddingResult> {
    const pool = this.servingPool();
    const contextSize = this.st.contextSize;
    if (this.maxTokenBytes !== null && contextSize !== null) {
      for (const [i, input] of inputs.entries()) {
        const atLeast = rawPromptTokensAtLeast(input, this.maxTokenBytes);
        if (atLeast > contextSize) throw inputTooLong(i, atLeast, contextSize);
      }
    }
    // In the scheduler with the generations (at most the slots' worth of tasks in the pool), charged as a prompt.
    const place = await this.admission.embeddingTurn(schedule, signal);
    const cancel = new SharedArrayBuffer(4);
    const left = () => Atomics.store(new Int32Array(cancel), 0, 1);
    signal?.addEventListener('abort', left, { once: true });
    if (signal?.aborted) left();
    let r: EmbeddingTaskResult | undefined;
    try {
      r = await pool.runEmbedding({ inputs: [...inputs], cancel });
    } catch (err) {
      throw this.disposed ? shuttingDown() : toApiError(engineFailure.internal('embedding_failed', err));
    } finally {
      signal?.removeEventListener('abort', left);
      if (r?.ok === true) place.charge(r.tokens.reduce((a, b) => a + b, 0));
      place.leave();
    }
    if (!r.ok) {
      if (r.reason === 'cancelled') throw clientClosedRequest();
      if (r.reason === 'too_long') throw inputTooLong(r.index, r.atLeastTokens, r.contextSize);
      throw invalidRequest(
        `'input[${r.index}]' holds a token id outside the vocabulary (0..${r.vocabularySize - 1})`,
        `input[${r.index}]`,
        'invalid_value',
      );
    }
    const vectors: Float32Array[] = [];
    for (let i = 0; i < r.tokens.length; i++)
      vectors.push(r.vectors.subarray(i * r.dimensions, (i + 1) * r.dimensions));
    return { vectors, promptTokens: r.tokens.reduce((a, b) => a + b, 0) };
  }

  /**
   * Graceful stop, step 1: new requests get 503 shutting_down; resolves once every admitted generation
   * has finished, or after `graceMs` (whatever still runs is then cut by dispose()).
   */
  async drain(graceMs: number): Promise<void> {
    this.draining = true;
    await waitFor(() => {
      const l = this.admission.load();
      return l.running + l.waiting === 0;
    }, performance.now() + graceMs);
  }

  /**
   * Idempotent (every call resolves once it has finished); in any model state. A pull in progress is
   * aborted and start() resolves. Generations still running are cut (drain() first to let them finish):
   * their workers stop them and their sinks end with shutting_down. The workers are terminated once those
   * have ended and the workers have released their models (WorkerStop), or after `workerStopTimeoutMs`.
   */
  dispose(): Promise<void> {
    return (this.disposing ??= this.release());
  }

  private async release(): Promise<void> {
    this.disposed = true;
    this.startup.abort();
    this.settleStart();
    const pool = this.pool;
    this.pool = null;
    this.admission.close(); // waiting embeddings' pool.run fails: shutting_down
    if (pool) {
      for (const cut of this.cuts) cut();
      await pool.stop(
        performance.now() + (this.o.workerStopTimeoutMs ?? WORKER_STOP_TIMEOUT_MS),
        () => this.cuts.size === 0,
        this.modelId,
      );
    }
    this.relay?.close();
    this.relay = null;
  }
}

/** An embeddings input longer than the context: a 400 naming it. */
function inputTooLong(index: number, atLeastTokens: number, contextSize: number) {
  return invalidRequest(
    `'input[${index}]' has at least ${atLeastTokens} tokens; this model's maximum context length is ${contextSize} tokens`,
    `input[${index}]`,
    'context_length_exceeded',
  );
}
