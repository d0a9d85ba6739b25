import { randomUUID } from 'node:crypto';
import path from 'node:path';
import { BroadcastChannel, MessageChannel } from 'node:worker_threads';
import { Piscina } from 'piscina';
import { engineFailure } from '../errors/engine-failure.ts';
import { contextLengthExceeded, modelFailed, modelWarmingUp, queueFull, shuttingDown } from '../errors/errors.ts';
import { toApiError } from '../errors/to-api-error.ts';
import { waitFor } from '../lifecycle/wait-for.ts';
import type { Logger } from '../log/logger.ts';
import type { Metrics } from '../metrics/metrics.ts';
import { chooseCpuKernels, type CpuKernelsChoice, type CpuKernelsMode } from './cpu-kernels.ts';
import { chooseGpuOffload, type GpuLayersMode, type GpuOffloadChoice } from './gpu-offload.ts';
import type { ChatEngine, GenerationHandle, GenerationRequest, GenerationSchedule, GenerationSink, ModelStatus } from './generation.ts';
import { FairScheduler } from './fair-scheduler.ts';
import type { Priority } from '../protocol/priority.ts';
import type { EmbeddingEngine, EmbeddingResult } from './embedding.ts';
import type { EmbeddingTask, EmbeddingTaskResult } from './embedding-task.ts';
import { invalidRequest } from '../errors/errors.ts';
import type { RawPrompt } from '../protocol/chat-request.ts';
import { MainEventRelay, type RelayOpener } from './main-event-relay.ts';
import { readModelMetadata } from './model-metadata.ts';
import { reasoningSyntaxOf } from '../protocol/reasoning-split.ts';
import { ModelPullAborted, ModelPullError, pullModel, type ModelSource } from './model-source.ts';
import { promptTokensAtLeast, rawPromptTokensAtLeast } from './prompt-bound.ts';
import { resolveGenerationJob } from './resolve-generation-job.ts';
import { calibrationCores, planThreads } from './thread-plan.ts';
import { type GenerationTask, INSTANT_TOKEN_BYTES, type MainEvent, type ModelWorkerData, type NativeTuning, type WorkerEvent, type WorkerStatus, type WorkerStop } from './worker-protocol.ts';

export interface LocalEngineOptions {
  source: ModelSource;
  modelsDir: string;
  engine: ModelWorkerData['engine'];
  workers: number;
  /** Sequences per worker; undefined: DEFAULT_SLOTS, or DEFAULT_GPU_SLOTS when the native loop runs on a GPU. */
  slots: number | undefined;
  /** Native engine: layers to offload to a GPU (gpu-offload.ts); default 0 (CPU, nothing probed). */
  gpuLayers?: GpuLayersMode;
  /** Native engine: the ggml CUDA backend library to try (default: the ones found, gpu-offload.ts). */
  gpuBackend?: string | undefined;
  /**
   * Shared by the engines of one server (several models): a probe that found no GPU at all (no CUDA library, or
   * none that sees a device, under `auto`) is not run again for the next model's load, since that does not change
   * while the process lives. Keyed by `--gpu-layers` and `--gpu-backend`.
   */
  cpuMachineMemo?: Map<string, GpuOffloadChoice>;
  /** 0 = planned from `cores` (thread-plan.ts). */
  threads: number;
  cores: number;
  contextSize: number;
  batchSize: number;
  /** Native engine tuning, as the config resolved it (passed to the workers as it is). */
  native: NativeTuning;
  /** Native engine: which ggml CPU kernels (cpu-kernels.ts); default `prebuilt`. */
  cpuKernels?: CpuKernelsMode;
  /** Server cap on completion tokens, and the default. */
  maxTokens: number;
  /** Requests allowed to wait for a slot. */
  queueLimit: number;
  showPullProgress: boolean;
  /** A pull that receives no byte for this long fails (state `failed`). */
  pullStallTimeoutMs: number;
  /** Native engine: opens the event relay its workers' loops send tokens to (absent: every event crosses the task port). */
  openRelay?: RelayOpener;
  /** How long dispose() waits for the workers to stop before it terminates them (default WORKER_STOP_TIMEOUT_MS). */
  workerStopTimeoutMs?: number;
}

/** Sequences per worker when --slots is not given: on the CPU, and on a GPU (which batches 64 rows about as fast as 8). */
export const DEFAULT_SLOTS = 8;
export const DEFAULT_GPU_SLOTS = 64;

/**
 * Slots per worker on a GPU when --slots is not given: DEFAULT_GPU_SLOTS, fewer when their KV cache (contextSize
 * tokens each, f16) would not fit in 80 % of the memory the GPU had free with the model loaded (the probe's
 * reading), less 1 GiB for compute buffers, shared by the workers. At least 1.
 */
export function gpuSlots(freeBytes: number, contextSize: number, kvBytesPerToken: number | null, workers: number): number {
  if (kvBytesPerToken === null || !(freeBytes > 0)) return DEFAULT_GPU_SLOTS;
  const budget = freeBytes * 0.8 - 2 ** 30;
  return Math.max(1, Math.min(DEFAULT_GPU_SLOTS, Math.floor(budget / workers / (contextSize * kvBytesPerToken))));
}

/** A generation or an embedding request in the scheduler's queue: hands its task to the pool, or is refused when another takes its place. */
interface QueuedGeneration {
  handOver(): void;
  refuse(): void;
}

/** A generation the gateway did not place (tests, internal callers): interactive, the anonymous tenant. */
const DEFAULT_SCHEDULE: GenerationSchedule = { tenant: '', priority: 'interactive' };

/** A JS shim that registers the TypeScript loader inside the worker, then loads model-worker.ts. */
const WORKER_URL = new URL('../worker/model-worker-entry.mjs', import.meta.url);

/**
 * dispose() waits at most this long (by default) for the cut generations to end and the workers to stop
 * (WorkerStop): a 2-worker load on a busy 2-core machine took over 4 s. Within the CLI's shutdown bound
 * (serve-command.ts SHUTDOWN_BOUND_MS, after the apps' 5 s stop time-out).
 */
const WORKER_STOP_TIMEOUT_MS = 8_000;

/**
 * The main-thread face of local inference: pulls and checks the model, owns the Piscina pool of model
 * workers, admits requests (slots + a bounded queue), relays each generation's events (its port's, and the
 * native loops' through the event relay) to its sink and records the engine metrics. Single owner: main.ts; `dispose()` is idempotent.
 */
export class LocalEngine implements ChatEngine, EmbeddingEngine {
  readonly modelId: string;
  private pool: Piscina<GenerationTask, void> | null = null;
  /** Native engine: relayed tasks' events arrive here from the loop threads (null: ports only). */
  private relay: MainEventRelay | null = null;
  private readonly st: ModelStatus;
  private running = 0;
  private waiting = 0;
  /** Set when the pull failed because the hub could not be resolved or reached: the reason chat calls are told. */
  private unreachable: string | undefined;
  /**
   * Generations waiting for the pool, in the order they get it (fair-scheduler.ts): each entry hands its task to
   * the pool. Nothing waits in Piscina's own queue: pump() hands over only what the slots can take.
   */
  private readonly scheduler = new FairScheduler<QueuedGeneration>();
  /** Generation tasks handed to the pool and not ended, by priority; embeddings in flight. */
  private readonly inFlight: Record<Priority, number> = { interactive: 0, batch: 0 };
  private embeddingsInFlight = 0;
  /** Generations waiting for a slot / holding one, by priority, as this thread counts them (publishLoad()). */
  private readonly waitingBy: Record<Priority, number> = { interactive: 0, batch: 0 };
  private readonly runningBy: Record<Priority, number> = { interactive: 0, batch: 0 };
  /** Each native worker's last preemption report (WorkerStatus 'preemptions'), by thread id. */
  private readonly preemptionReports = new Map<number, { preemptions: number; parked: number }>();
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
  /** Where dispose() sends WorkerStop, and the workers that answered it. */
  private readonly stopChannel = `hearth-model-workers:${randomUUID()}`;
  private workersStopped = 0;
  /** Workers whose model load was abandoned by the stop. */
  private loadsAborted = 0;
  /** One per generation in flight: asks its worker to stop it (its sink then ends with shutting_down). */
  private readonly cuts = new Set<() => void>();
  private readonly labels: { model: string };
  /** Each worker's last KV cell report (WorkerStatus 'kv-cache'), by thread id. */
  private readonly kvUse = new Map<number, { used: number; total: number }>();
  /** Each worker's last host prompt cache report (WorkerStatus 'prompt-cache'), by thread id. */
  private readonly promptCaches = new Map<number, { lookups: number; hits: number; bytes: number; entries: number }>();

  constructor(private readonly o: LocalEngineOptions, private readonly metrics: Metrics, private readonly log: Logger) {
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
    this.publishLoad();
    for (const priority of ['interactive', 'batch'] as const) metrics.generatedTokensByPriority.inc({ ...this.labels, priority }, 0);
    metrics.preemptions.inc(this.labels, 0);
  }

  status(): ModelStatus {
    return { ...this.st, pull: this.st.pull && { ...this.st.pull } };
  }

  load(): { running: number; waiting: number } {
    return { running: this.running, waiting: this.waiting };
  }

  /** A worker's host prompt cache report: counters by their increase, gauges summed over the workers. */
  private recordPromptCache(m: Extract<WorkerStatus, { hearth: 'prompt-cache' }>): void {
    const last = this.promptCaches.get(m.worker) ?? { lookups: 0, hits: 0, bytes: 0, entries: 0 };
    this.promptCaches.set(m.worker, { lookups: m.lookups, hits: m.hits, bytes: m.bytes, entries: m.entries });
    if (m.lookups > last.lookups) this.metrics.promptCacheLookups.inc(this.labels, m.lookups - last.lookups);
    if (m.hits > last.hits) this.metrics.promptCacheHits.inc(this.labels, m.hits - last.hits);
    let bytes = 0;
    let entries = 0;
    for (const c of this.promptCaches.values()) {
      bytes += c.bytes;
      entries += c.entries;
    }
    this.metrics.promptCacheBytes.set(this.labels, bytes);
    this.metrics.promptCacheEntries.set(this.labels, entries);
  }

  /**
   * hearth_num_requests_waiting / _running by priority: a batch generation its loop parked (preempted, not yet
   * resumed) counts as waiting, by the workers' last reports.
   */
  private publishLoad(): void {
    let parked = 0;
    for (const r of this.preemptionReports.values()) parked += r.parked;
    parked = Math.min(parked, this.runningBy.batch);
    this.metrics.requestsWaiting.set({ ...this.labels, priority: 'interactive' }, this.waitingBy.interactive);
    this.metrics.requestsRunning.set({ ...this.labels, priority: 'interactive' }, this.runningBy.interactive);
    this.metrics.requestsWaiting.set({ ...this.labels, priority: 'batch' }, this.waitingBy.batch + parked);
    this.metrics.requestsRunning.set({ ...this.labels, priority: 'batch' }, this.runningBy.batch - parked);
  }

  /** A native worker's preemption report: the counter by its increase, the parked jobs into the load gauges. */
  private recordPreemptions(m: Extract<WorkerStatus, { hearth: 'preemptions' }>): void {
    const last = this.preemptionReports.get(m.worker)?.preemptions ?? 0;
    this.preemptionReports.set(m.worker, { preemptions: m.preemptions, parked: m.parked });
    if (m.preemptions > last) this.metrics.preemptions.inc(this.labels, m.preemptions - last);
    this.publishLoad();
  }

  /** A worker's KV cell report: the gauge is the cells all workers' running jobs hold over all their cells. */
  private recordKvUse(m: Extract<WorkerStatus, { hearth: 'kv-cache' }>): void {
    this.kvUse.set(m.worker, { used: m.used, total: m.total });
    let used = 0;
    let total = 0;
    for (const w of this.kvUse.values()) {
      used += w.used;
      total += w.total;
    }
    if (total > 0) this.metrics.kvCacheUsage.set(this.labels, used / total);
  }

  private setState(state: ModelStatus['state']): void {
    this.st.state = state;
    for (const s of ['unloaded', 'pulling', 'loading', 'ready', 'failed']) this.metrics.modelState.set({ ...this.labels, state: s }, s === state ? 1 : 0);
  }

  private fail(reason: string): void {
    this.st.error = reason;
    this.setState('failed');
    this.log.error('model failed', { model: this.modelId, reason });
  }

  /**
   * Pulls (if needed), checks and loads the model in every worker. Never throws: failure is a state.
   * dispose() during the pull or the load abandons it (the pull is aborted, the workers torn down) and
   * this resolves at once.
   */
  async start(): Promise<void> {
    try {
      let modelPath: string;
      if (this.o.source.kind === 'hub') {
        this.log.info('pulling model', { model: this.modelId, uri: this.o.source.uri, dir: this.o.modelsDir });
        let lastLogged = 0;
        modelPath = await pullModel(this.o.source, {
          modelsDir: this.o.modelsDir,
          signal: this.startup.signal,
          showCliProgress: this.o.showPullProgress,
          stallTimeoutMs: this.o.pullStallTimeoutMs,
          onProgress: ({ downloadedBytes, totalBytes }) => {
            const ratio = totalBytes > 0 ? downloadedBytes / totalBytes : 0;
            this.st.pull = { downloadedBytes, totalBytes, ratio };
            this.metrics.modelPullProgress.set(this.labels, ratio);
            if (!this.o.showPullProgress && (ratio - lastLogged >= 0.1 || ratio === 1)) {
              lastLogged = ratio;
              this.log.info('pull progress', { model: this.modelId, percent: Math.round(ratio * 100), downloadedBytes, totalBytes });
            }
          },
        });
        this.setState('loading');
      } else {
        modelPath = this.o.source.path;
      }
      this.metrics.modelPullProgress.set(this.labels, 1);
      const md = await readModelMetadata(modelPath);
      this.st.metadata = { architecture: md.architecture, contextLength: md.contextLength, parameterCount: md.parameterCount, quantization: md.quantization, hasChatTemplate: md.chatTemplate !== null, reasoning: reasoningSyntaxOf(md.chatTemplate) };
      // The instant test engine has no model limits: its context is what the operator asked for.
      const contextSize = this.o.engine === 'instant' ? this.o.contextSize : Math.min(this.o.contextSize, md.contextLength ?? this.o.contextSize);
      this.st.contextSize = contextSize;
      this.maxTokenBytes = this.o.engine === 'instant' ? INSTANT_TOKEN_BYTES : md.maxTokenBytes;
      // The GPU is probed and the kernels are timed (auto) before the workers start: backends are process-wide.
      const gpu = await this.chooseGpu(modelPath);
      if (gpu?.probe && this.o.slots === undefined) this.st.slots = gpuSlots(gpu.probe.device.memoryFreeBytes, contextSize, md.kvBytesPerToken, this.o.workers);
      const kernels = await this.chooseKernels(modelPath);
      this.log.info('loading model', { model: this.modelId, path: modelPath, ...this.st.metadata, contextSize, workers: this.o.workers, slots: this.st.slots, threads: this.st.threads, ...(kernels ? { cpuKernels: kernels.kernels } : {}), ...(gpu?.library ? { gpuLayers: gpu.layers, gpuBackend: gpu.library } : {}) });
      if (this.disposed) return;
      await this.startPool({
        engine: this.o.engine,
        modelPath,
        contextSize,
        slots: this.st.slots,
        threads: this.st.threads,
        fallbackThreads: planThreads({ cores: this.o.cores, workers: this.o.workers, engine: 'node-llama-cpp', requested: this.o.threads }),
        batchSize: this.o.batchSize,
        native: this.o.native,
        // On a GPU the CPU threads only sample and feed it: no thread calibration (it would time GPU steps).
        calibrateCores: gpu?.library ? 0 : calibrationCores({ cores: this.o.cores, workers: this.o.workers, engine: this.o.engine, requested: this.o.threads }),
        cpuKernels: kernels?.kernels ?? 'prebuilt',
        ...(gpu?.library ? { gpu: { library: gpu.library, layers: gpu.layers } } : {}),
        stopChannel: this.stopChannel,
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

  /** Native engines: where the workers compute (logged as "gpu offload"; a warning when a GPU was expected); null for the others. */
  private async chooseGpu(modelPath: string): Promise<GpuOffloadChoice | null> {
    if (this.o.engine !== 'native' && this.o.engine !== 'auto') return null;
    const mode = this.o.gpuLayers ?? 0;
    const memoKey = `${mode}|${this.o.gpuBackend ?? ''}`;
    const known = this.o.cpuMachineMemo?.get(memoKey);
    if (mode !== 0 && !known) this.log.info('probing gpu', { model: this.modelId });
    const choice = known ?? (await chooseGpuOffload({ mode, modelPath, backend: this.o.gpuBackend, signal: this.startup.signal }));
    if (!known && mode !== 0 && choice.library === null && !choice.warn) this.o.cpuMachineMemo?.set(memoKey, choice);
    const fields = { model: this.modelId, gpuLayers: choice.layers, why: choice.why, ...(choice.probe ? { device: choice.probe.device.description, offloaded: `${choice.probe.gpuLayers}/${choice.probe.modelLayers + 1}`, probeMs: Math.round(choice.probe.decodeMs) } : {}) };
    if (choice.warn) this.log.warn('gpu unusable: computing on the cpu', fields);
    else this.log.info('gpu offload', fields);
    if (choice.detail) this.log.debug('gpu probe detail', { model: this.modelId, detail: choice.detail });
    return choice;
  }

  /** Native engines: the ggml CPU kernels the workers load (logged as "cpu kernels"); null for the others. */
  private async chooseKernels(modelPath: string): Promise<CpuKernelsChoice | null> {
    if (this.o.engine !== 'native' && this.o.engine !== 'auto') return null;
    const mode = this.o.cpuKernels ?? 'prebuilt';
    if (mode === 'auto') this.log.info('timing cpu kernels', { model: this.modelId });
    const choice = await chooseCpuKernels({ mode, modelPath, slots: this.st.slots, threads: this.st.threads, cores: this.o.cores, cacheFile: path.join(this.o.modelsDir, 'cpu-kernels.json'), signal: this.startup.signal });
    this.log.info('cpu kernels', { model: this.modelId, kernels: choice.kernels, why: choice.why, ...(choice.msPerStep ? { msPerStep: choice.msPerStep, cached: choice.cached } : {}) });
    return choice;
  }

  private startPool(workerData: ModelWorkerData): Promise<void> {
    if ((workerData.engine === 'native' || workerData.engine === 'auto') && this.o.openRelay) {
      this.relay = MainEventRelay.open(this.o.openRelay, (err) => this.log.error('generation event handler failed', { error: err instanceof Error ? err.message : String(err) }));
    }
    return new Promise((resolve) => {
      this.settleStart = resolve;
      const pool = new Piscina<GenerationTask, void>({
        filename: WORKER_URL.href,
        minThreads: this.o.workers,
        maxThreads: this.o.workers,
        // Twice the slots: the native loop takes an interactive job beyond its slots when a batch job can yield
        // one (pump()); it parks the batch job and resumes it later. pump() never hands over more than that.
        concurrentTasksPerWorker: 2 * this.st.slots,
        idleTimeout: 2 ** 31 - 1,
        maxQueue: Math.max(1, this.o.queueLimit + this.o.workers * this.st.slots),
        atomics: 'disabled',
        workerData,
      });
      this.pool = pool;
      pool.on('message', (m: WorkerStatus) => {
        if (m?.hearth === 'worker-stopped') {
          this.workersStopped++;
          if (m.loadAborted) this.loadsAborted++;
          return;
        }
        if (this.disposed) return;
        if (m?.hearth === 'prompt-cache') return this.recordPromptCache(m);
        if (m?.hearth === 'kv-cache') return this.recordKvUse(m);
        if (m?.hearth === 'preemptions') return this.recordPreemptions(m);
        if (m?.hearth === 'worker-ready') {
          this.st.workersReady++;
          if (m.engine === 'native') this.metrics.promptCacheCapacity.inc(this.labels, this.o.native.promptCacheMiB * (1 << 20));
          this.st.engine = m.engine;
          this.st.contextSize = m.contextSize;
          this.st.threads = m.threads;
          this.st.gpu = m.gpu ?? { backend: false, devices: [], gpuLayers: 0 };
          this.metrics.gpuLayers.set(this.labels, this.st.gpu.gpuLayers);
          if (m.fallbackReason) this.log.warn('native engine unavailable; using node-llama-cpp sequences', { reason: m.fallbackReason });
          if (this.st.workersReady === this.o.workers && this.st.state === 'loading') {
            this.st.readyAt = Date.now();
            this.setState('ready');
            this.log.info('model ready', { model: this.modelId, engine: m.engine, workers: this.o.workers, slots: this.st.slots, threads: m.threads, contextSize: m.contextSize, ...m.compute, ...(m.gpu ? { gpu: m.gpu } : {}) });
            resolve();
          }
        } else if (m?.hearth === 'worker-failed') {
          this.fail(`a model worker could not load the model: ${m.reason}`);
          resolve();
        }
      });
      pool.on('error', (err: Error) => {
        if (this.disposed) return;
        this.log.error('model worker error', { error: err.message });
        if (this.st.state === 'loading') {
          this.fail(err.message);
          resolve();
        }
      });
    });
  }

  /** The worker pool, or a throw unless the model serves: shutting down (503), failed, still pulling or loading (503 model_warming_up). */
  private servingPool(): Piscina<GenerationTask, void> {
    if (this.disposed || this.draining) throw shuttingDown();
    if (this.st.state === 'failed') throw modelFailed(this.unreachable);
    if (this.st.state !== 'ready' || !this.pool) {
      throw modelWarmingUp({ state: this.st.state, progress: this.st.pull ? Math.round(this.st.pull.ratio * 1000) / 10 : null, workers_ready: this.st.workersReady, workers: this.st.workers });
    }
    return this.pool;
  }

  generate(request: GenerationRequest, sink: GenerationSink): GenerationHandle {
    const pool = this.servingPool();
    // A prompt that cannot fit is refused here, from its bytes, before it takes a queue place or a worker's time.
    const contextSize = this.st.contextSize;
    if (this.maxTokenBytes !== null && contextSize !== null) {
      const atLeast = request.prompt === undefined ? promptTokensAtLeast(request.messages, this.maxTokenBytes) : rawPromptTokensAtLeast(request.prompt, this.maxTokenBytes);
      if (atLeast + 1 > contextSize) throw contextLengthExceeded(atLeast, contextSize, true);
    }
    const capacity = this.o.workers * this.st.slots;
    if (this.running + this.waiting >= capacity + this.o.queueLimit) {
      // Full: the newcomer may take the place of another tenant's newest (or a batch request's): round-robin places.
      const schedule = request.schedule ?? DEFAULT_SCHEDULE;
      const yielded = this.scheduler.yieldPlace(schedule.tenant, schedule.priority);
      if (yielded === undefined) throw queueFull(1);
      yielded.refuse();
    }
    return this.dispatch(pool, request, sink);
  }

  /**
   * Whether the next waiting generation may have the pool now: while the slots are not all taken, or, for
   * interactive work on the native loop, while a batch generation can yield its slot to it (the loop parks the
   * batch job at its next step and resumes it when a slot frees: at most one interactive job per batch job
   * beyond the slots, so the loop holds at most twice its slots). An interactive embedding may take that place too
   * (it runs beside the loop, on its own context): embeddings count against the same bound.
   */
  private admits(priority: Priority): boolean {
    if (this.slotsLeft()) return true;
    const capacity = this.o.workers * this.st.slots;
    return priority === 'interactive' && this.st.engine === 'native' && this.inFlight.batch > 0 && this.inFlight.interactive + this.embeddingsInFlight < capacity;
  }

  /** Whether the pool holds fewer tasks (generations and embeddings) than the workers have slots. */
  private slotsLeft(): boolean {
    return this.inFlight.interactive + this.inFlight.batch + this.embeddingsInFlight < this.o.workers * this.st.slots;
  }

  /**
   * Resolves when an embedding request may have the pool: it waits in the scheduler with the generations (its
   * tenant's share, its priority), counted as waiting, then as running and in embeddingsInFlight until the caller's
   * finally. Rejects with queue_full when a newcomer takes its place, shutting_down when dispose() cuts it.
   */
  private embeddingTurn(schedule: GenerationSchedule): Promise<void> {
    const priority = schedule.priority;
    return new Promise((resolve, reject) => {
      this.waiting++;
      this.waitingBy[priority]++;
      this.publishLoad();
      const leaveQueue = () => {
        this.waiting--;
        this.waitingBy[priority]--;
        this.cuts.delete(cut);
      };
      const handOver = () => {
        leaveQueue();
        this.running++;
        this.runningBy[priority]++;
        this.embeddingsInFlight++;
        this.publishLoad();
        resolve();
      };
      const refuse = () => {
        leaveQueue();
        this.publishLoad();
        reject(queueFull(1));
      };
      const cut = () => {
        ticket.remove();
        leaveQueue();
        this.publishLoad();
        reject(shuttingDown());
      };
      const ticket = this.scheduler.enqueue({ handOver, refuse }, schedule.tenant, priority);
      this.cuts.add(cut);
      this.pump();
    });
  }

  /**
   * Hands waiting generations and embeddings, in the scheduler's order, to the pool while the slots (or admits())
   * let them. Main thread.
   */
  private pump(): void {
    if (this.disposed) return; // dispose() cuts what still waits
    for (let p = this.scheduler.peekPriority(); p !== null && this.admits(p); p = this.scheduler.peekPriority()) this.scheduler.next()!.item.handOver();
  }

  private dispatch(pool: Piscina<GenerationTask, void>, request: GenerationRequest, sink: GenerationSink): GenerationHandle {
    const { port1, port2 } = new MessageChannel();
    const m = this.metrics;
    const labels = this.labels;
    const schedule: GenerationSchedule = request.schedule ?? DEFAULT_SCHEDULE;
    const priority = schedule.priority;
    const byPriority = { ...labels, priority };
    const admittedAt = performance.now();
    let phase: 'waiting' | 'running' | 'ended' = 'waiting';
    /** Handed to the pool (the scheduler counts it as the tenant's running generation until it ends). */
    let handedOver = false;
    let cancelled = false;
    let firstTokenAt = 0;
    let lastTextAt = 0;
    this.waiting++;
    this.waitingBy[priority]++;
    this.publishLoad();

    const leave = () => {
      if (phase === 'waiting') {
        this.waiting--;
        this.waitingBy[priority]--;
      } else if (phase === 'running') {
        this.running--;
        this.runningBy[priority]--;
      }
      this.publishLoad();
      phase = 'ended';
      port1.close();
      if (relayed) this.relay?.unroute(relayed);
      this.cuts.delete(cut);
      if (handedOver) {
        this.inFlight[priority]--;
        this.scheduler.finished(schedule.tenant);
        this.pump();
      } else {
        ticket.remove();
      }
    };
    // Not the request's cancel: the engine stops it, and its 'done' (cancelled) ends the sink with shutting_down.
    // One no worker has seen yet leaves the scheduler's queue and ends so at once.
    const cut = () => {
      if (cancelled || phase === 'ended') return;
      if (handedOver) return port1.postMessage({ t: 'cancel' } satisfies MainEvent);
      leave();
      sink.onError(shuttingDown());
    };
    this.cuts.add(cut);

    const start = () => {
      this.waiting--;
      this.waitingBy[priority]--;
      this.running++;
      this.runningBy[priority]++;
      this.publishLoad();
      phase = 'running';
      m.queueTime.observe(labels, (performance.now() - admittedAt) / 1000);
    };

    // One handler for the port's events and the relay's (a relayed event may overtake the port's 'start').
    const onEvent = (e: WorkerEvent) => {
      if (phase === 'ended') return;
      if (phase === 'waiting') start();
      switch (e.t) {
        case 'start':
          return;
        case 'prompt':
          m.promptTokens.inc(labels, e.promptTokens);
          m.prefixCacheQueries.inc(labels, e.promptTokens);
          m.prefixCacheHits.inc(labels, e.cachedTokens); // also when 0: the hit-rate series exists from the first request
          this.scheduler.charge(schedule.tenant, e.promptTokens);
          return;
        case 'text': {
          const now = performance.now();
          this.scheduler.charge(schedule.tenant, e.n);
          m.generatedTokensByPriority.inc(byPriority, e.n);
          if (firstTokenAt === 0) {
            firstTokenAt = now;
            m.timeToFirstToken.observe(labels, (now - admittedAt) / 1000);
            // Tokens delivered together with the first one reached the client with it: a gap of 0 each (as the
            // later deliveries' gap is spread over their tokens), so every token after the first is observed once.
            for (let i = 1; i < e.n; i++) m.interTokenLatency.observe(labels, 0);
          } else if (e.n > 0) {
            const gap = (now - lastTextAt) / 1000 / e.n;
            for (let i = 0; i < e.n; i++) m.interTokenLatency.observe(labels, gap);
          }
          lastTextAt = now;
          if (!cancelled) {
            if (e.logprobs) sink.onText(e.text, e.logprobs);
            else sink.onText(e.text);
          }
          return;
        }
        case 'done': {
          leave();
          const finishReason = cancelled ? 'cancelled' : e.finishReason;
          if (request.countOnly !== true) {
            m.generationTokens.inc(labels, e.completionTokens);
            m.e2eLatency.observe(labels, (performance.now() - admittedAt) / 1000);
            m.requestSuccess.inc({ ...labels, finished_reason: finishReason });
          }
          if (cancelled) return;
          if (finishReason === 'cancelled') {
            // Cancelled by the engine, not by this request: its loop stopped under it (workers torn down at shutdown).
            sink.onError(this.disposed || this.draining ? shuttingDown() : toApiError(engineFailure.internal('engine_stopped', 'the engine stopped the generation')));
            return;
          }
          sink.onDone({ finishReason, promptTokens: e.promptTokens, cachedTokens: e.cachedTokens, completionTokens: e.completionTokens, ...(e.stop !== undefined ? { stop: e.stop } : {}) });
          return;
        }
        case 'error':
          leave();
          if (!cancelled) sink.onError(toApiError(e.failure));
          return;
      }
    };
    port1.on('message', onEvent);
    const relayed = this.relay?.route(onEvent);

    const task: GenerationTask = {
      messages: request.messages,
      tools: request.tools ?? [],
      prompt: request.prompt ?? null,
      countOnly: request.countOnly === true,
      promptSuffix: request.promptSuffix ?? '',
      job: resolveGenerationJob(request, { maxTokens: this.o.maxTokens }),
      relay: relayed ?? null,
      port: port2,
    };
    const handOver = () => {
      handedOver = true;
      this.inFlight[priority]++;
      pool.run(task, { transferList: [port2] }).catch((err: unknown) => {
        if (phase === 'ended') return;
        leave();
        // Workers terminated by dispose() (shutdown after the grace period) are no failure to log.
        const failure = this.disposed ? shuttingDown() : toApiError(engineFailure.internal('worker_task_failed', err)); // the mapper logs it
        if (!cancelled) sink.onError(failure);
      });
    };
    // Its place taken by another tenant's request (the queue was full): refused as a full queue would have been.
    const refuse = () => {
      if (phase === 'ended') return;
      leave();
      if (!cancelled) sink.onError(queueFull(1));
    };
    const ticket = this.scheduler.enqueue({ handOver, refuse }, schedule.tenant, priority);
    this.pump();

    return {
      cancel: () => {
        if (cancelled || phase === 'ended') return;
        cancelled = true;
        if (!handedOver) {
          // Still in the scheduler's queue: it leaves at once and ends silently (no worker ever saw it).
          leave();
          if (request.countOnly !== true) m.requestSuccess.inc({ ...labels, finished_reason: 'cancelled' });
          return;
        }
        port1.postMessage({ t: 'cancel' } satisfies MainEvent);
      },
    };
  }

  /**
   * The inputs' embeddings: one `embed` task on a model worker (Piscina's named task), which tokenizes them and
   * computes their vectors (batched by the native loop). Admitted as a generation is (503 while warming up,
   * failed, shutting down, or with the queue full: it may take the place of another tenant's newest or of batch
   * work), it waits in the fair scheduler with the generations at `schedule`'s priority (interactive before
   * batch; the tenant's share charged with its tokens) and is counted as one waiting, then running request of that
   * priority; an input that cannot fit the context is refused here from its bytes, or by the worker once
   * tokenized: a 400 naming `input[i]`. No other generation metrics are recorded.
   */
  async embed(inputs: readonly RawPrompt[], schedule: GenerationSchedule = DEFAULT_SCHEDULE): Promise<EmbeddingResult> {
    const pool = this.servingPool() as unknown as Piscina<EmbeddingTask, EmbeddingTaskResult>;
    const contextSize = this.st.contextSize;
    if (this.maxTokenBytes !== null && contextSize !== null) {
      for (const [i, input] of inputs.entries()) {
        const atLeast = rawPromptTokensAtLeast(input, this.maxTokenBytes);
        if (atLeast > contextSize) throw inputTooLong(i, atLeast, contextSize);
      }
    }
    if (this.running + this.waiting >= this.o.workers * this.st.slots + this.o.queueLimit) {
      const yielded = this.scheduler.yieldPlace(schedule.tenant, schedule.priority);
      if (yielded === undefined) throw queueFull(1);
      yielded.refuse();
    }
    await this.embeddingTurn(schedule); // at most the slots' worth of tasks in the pool, as generations
    let r: EmbeddingTaskResult | undefined;
    try {
      r = await pool.run({ inputs: [...inputs] }, { name: 'embed' });
    } catch (err) {
      throw this.disposed ? shuttingDown() : toApiError(engineFailure.internal('embedding_failed', err));
    } finally {
      this.running--;
      this.runningBy[schedule.priority]--;
      this.embeddingsInFlight--;
      if (r?.ok === true) this.scheduler.charge(schedule.tenant, r.tokens.reduce((a, b) => a + b, 0)); // its share, as a prompt's tokens
      this.scheduler.finished(schedule.tenant);
      this.publishLoad();
      this.pump();
    }
    if (!r.ok) {
      if (r.reason === 'too_long') throw inputTooLong(r.index, r.atLeastTokens, r.contextSize);
      throw invalidRequest(`'input[${r.index}]' holds a token id outside the vocabulary (0..${r.vocabularySize - 1})`, `input[${r.index}]`, 'invalid_value');
    }
    const vectors: Float32Array[] = [];
    for (let i = 0; i < r.tokens.length; i++) vectors.push(r.vectors.subarray(i * r.dimensions, (i + 1) * r.dimensions));
    return { vectors, promptTokens: r.tokens.reduce((a, b) => a + b, 0) };
  }

  /**
   * Graceful stop, step 1: new requests get 503 shutting_down; resolves once every admitted generation
   * has finished, or after `graceMs` (whatever still runs is then cut by dispose()).
   */
  async drain(graceMs: number): Promise<void> {
    this.draining = true;
    await waitFor(() => this.running + this.waiting === 0, performance.now() + graceMs);
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
    if (pool) {
      for (const cut of this.cuts) cut();
      await this.stopWorkers(performance.now() + (this.o.workerStopTimeoutMs ?? WORKER_STOP_TIMEOUT_MS));
      await pool.destroy();
    }
    this.relay?.close();
    this.relay = null;
  }

  /**
   * Once the generations have ended, sends WorkerStop; resolves when every worker answered, or at `deadline`.
   * Sent again every 100 ms: a worker still starting (not yet listening) misses what came before it listened.
   */
  private async stopWorkers(deadline: number): Promise<void> {
    await waitFor(() => this.cuts.size === 0, deadline);
    const channel = new BroadcastChannel(this.stopChannel);
    const startedAt = performance.now();
    const send = () => channel.postMessage({ t: 'stop' } satisfies WorkerStop);
    send();
    const resend = setInterval(send, 100);
    await waitFor(() => this.workersStopped >= this.o.workers, deadline);
    clearInterval(resend);
    channel.close();
    const outcome = { model: this.modelId, stopped: this.workersStopped, workers: this.o.workers, loadsAborted: this.loadsAborted, ms: Math.round(performance.now() - startedAt) };
    if (this.workersStopped < this.o.workers) this.log.warn('model workers did not stop in time: terminating them', outcome);
    else this.log.info('model workers stopped', outcome);
  }
}

/** An embeddings input longer than the context: a 400 naming it. */
function inputTooLong(index: number, atLeastTokens: number, contextSize: number) {
  return invalidRequest(`'input[${index}]' has at least ${atLeastTokens} tokens; this model's maximum context length is ${contextSize} tokens`, `input[${index}]`, 'context_length_exceeded');
}
