import { conflict, modelFailed, modelNotFound, modelWarmingUp, shuttingDown } from '../errors/errors.ts';
import type { Logger } from '../log/logger.ts';
import type { Metrics } from '../metrics/metrics.ts';
import type { EmbeddingEngine } from './embedding.ts';
import type { ChatEngine } from './generation.ts';
import { LoadMeasures } from './load-measures.ts';
import { leaseOn, type ModelLease } from './model-lease.ts';
import { countedBytes, isIdle, nextRoomStep } from './model-room.ts';
import { ModelUsage } from './model-usage.ts';
import {
  entryState,
  pullPercent,
  REGISTRY_STATES,
  type ManagedEngine,
  type RegisteredModel,
  type RegistryEntry,
} from './registry-entry.ts';
import type { RegistryState } from './registry-state.ts';
import { type ModelListing, type RegistryModelView, statusWhileUnloaded, viewOf } from './registry-views.ts';

export type { ManagedEngine, RegisteredModel } from './registry-entry.ts';
export type { RegistryState } from './registry-state.ts';
export type { ModelListing, RegistryModelView } from './registry-views.ts';
export type { ModelLease } from './model-lease.ts';

export interface ModelRegistryOptions {
  /** How long acquire() waits for a load it started or found (--load-wait-ms). */
  loadWaitMs: number;
  /** Most models loaded at once; 0: no limit but the memory budget (--max-loaded-models). */
  maxLoaded: number;
  /** Bytes the loaded models may take together, estimated or measured (--model-memory-mib). */
  memoryBudgetBytes: number;
  /** Unload a model unused for this long; 0: never (--idle-unload-s). */
  idleUnloadMs: number;
  /** Workers per model (a model's KV cache is counted once per worker). */
  workers: number;
  /** Defaults of a model that sets none (--slots, --context-size). */
  slots: number;
  contextSize: number;
  modelsDir: string;
  /** The process's resident memory now, in bytes (default process.memoryUsage.rss; a test's own figures). */
  rss?: () => number;
}

const ROOM_POLL_MS = 50;

/**
 * The models one server serves (contract.md "Several models on one server"). Each is loaded on demand by
 * acquire(), once however many requests ask at the same time; least recently used idle models are unloaded when
 * `maxLoaded` or the memory budget would be exceeded, and idle ones after `idleUnloadMs`. A model is never unloaded
 * while a lease on it is held or its engine has a request running or waiting; a request for a model being
 * unloaded waits for the unload, then loads it again. Single owner: main.ts; dispose() unloads everything.
 */
export class ModelRegistry {
  private readonly entries = new Map<string, RegistryEntry>();
  /** Model loads' memory, measured (a load that overlaps another is not). */
  private readonly loadMeasures: LoadMeasures;
  private readonly idleTimer: NodeJS.Timeout | null;
  private closed = false;
  /** Aborted by dispose(): the pulls the admin API started stop. */
  private readonly pulls = new AbortController();
  /** Orders uses (several may fall in one millisecond). */
  private uses = 0;

  constructor(
    private readonly o: ModelRegistryOptions,
    private readonly createEngine: (id: string, model: RegisteredModel) => ManagedEngine,
    private readonly metrics: Metrics,
    private readonly log: Logger,
  ) {
    this.loadMeasures = new LoadMeasures(o.rss ?? (() => process.memoryUsage.rss()));
    this.idleTimer =
      o.idleUnloadMs > 0
        ? setInterval(() => this.unloadIdle(), Math.min(1000, Math.max(50, o.idleUnloadMs / 4))).unref()
        : null;
  }

  /** Adds a model (unloaded). A conflict (409) when its id is taken. */
  add(model: RegisteredModel): void {
    const id = model.source.modelId;
    if (this.entries.has(id)) throw conflict(`A model with id '${id}' already exists`, 'model_exists');
    this.entries.set(id, {
      id,
      model,
      engine: null,
      loading: null,
      unloading: null,
      pins: 0,
      lastUsed: 0,
      useSeq: 0,
      estimateBytes: 0,
      measuredBytes: 0,
      counted: false,
      lastStatus: null,
      pull: null,
      pullStop: null,
      error: null,
      loads: 0,
      usage: new ModelUsage(),
    });
    this.setStateMetric(id, 'unloaded');
    for (const reason of UNLOAD_REASONS) this.metrics.modelUnloads.inc({ model: id, reason }, 0); // every series exists from the start
    this.metrics.modelLoads.inc({ model: id }, 0);
  }

  /**
   * Adds a model whose engine is already made and started by the caller (a test's engine, or a server of one
   * engine): served as it is, never unloaded but at dispose().
   */
  attach(engine: ChatEngine & Partial<EmbeddingEngine>): void {
    const id = engine.modelId;
    this.add({ source: { kind: 'local', path: '', modelId: id } });
    const e = this.entries.get(id)!;
    e.engine = engine as ManagedEngine;
    e.counted = true;
    e.pins = 1; // held for good: never unloaded
  }

  /**
   * The status of model `id` as one engine's: its engine's while loaded, else the last one it had with the
   * registry's state (unloaded, pulling, failed). For GET /health and the serving stats of the default model.
   */
  face(id: string): Pick<ChatEngine, 'modelId' | 'status' | 'load'> {
    return {
      modelId: id,
      status: () => {
        const e = this.entries.get(id);
        if (!e) throw modelNotFound(id, this.ids());
        return (e.unloading === null ? e.engine?.status() : undefined) ?? statusWhileUnloaded(e, this.o);
      },
      load: () => this.entries.get(id)?.engine?.load() ?? { running: 0, waiting: 0 },
    };
  }

  has(id: string): boolean {
    return this.entries.has(id);
  }

  ids(): string[] {
    return [...this.entries.keys()];
  }

  /**
   * The model `id`, ready to serve, held until the lease is released. A model not loaded is loaded (once,
   * whoever asks) and waited for up to `loadWaitMs`; past that, 503 model_warming_up (Retry-After). A model
   * whose engine is still pulling or has failed is handed out as it is: its engine answers model_warming_up
   * (with the pull's progress) or model_failed itself. 404 model_not_found for an unknown id.
   */
  async acquire(id: string): Promise<ModelLease> {
    const e = this.entries.get(id);
    if (!e) throw modelNotFound(id, this.ids());
    if (this.closed) throw shuttingDown();
    this.touch(e);
    const served = this.servable(e);
    if (served) return this.pin(e, served);
    if (e.pull?.running) throw modelWarmingUp({ state: 'pulling', progress: pullPercent(e.pull) });
    if (e.error !== null) throw modelFailed();
    const load = this.ensureLoaded(e);
    let timer: NodeJS.Timeout | undefined;
    await Promise.race([
      load,
      new Promise<void>((resolve) => {
        timer = setTimeout(resolve, this.o.loadWaitMs);
      }),
    ]);
    clearTimeout(timer);
    const now = this.servable(e);
    if (now) return this.pin(e, now);
    if (this.closed) throw shuttingDown();
    if (e.error !== null) throw modelFailed();
    throw modelWarmingUp({ state: entryState(e), progress: null });
  }

  /** Starts loading `id` (the admin API's load, and the first model at start); resolves when it is loaded or has failed. */
  load(id: string): Promise<void> {
    const e = this.entries.get(id);
    if (!e) throw modelNotFound(id, this.ids());
    if (e.pull?.running) throw modelWarmingUp({ state: 'pulling', progress: pullPercent(e.pull) });
    e.error = null; // an owner's load tries a failed model again
    if (e.engine?.status().state === 'failed') return this.unload(e, 'failed').then(() => this.ensureLoaded(e));
    return this.ensureLoaded(e);
  }

  /** Unloads `id` now (the admin API); 409 model_busy while a request holds it. */
  async unloadNow(id: string): Promise<void> {
    const e = this.entries.get(id);
    if (!e) throw modelNotFound(id, this.ids());
    if (e.loading !== null || !isIdle(e))
      throw conflict(`The model '${id}' is serving requests or loading; try again when it is idle`, 'model_busy');
    await this.unload(e, 'request');
  }

  /**
   * Pulls a hub model into the models dir (the admin API), the model `unloaded` once present. Runs in the
   * background: progress in the model's view; a failure leaves it `failed` with the reason.
   */
  pull(
    id: string,
    run: (
      onProgress: (p: { downloadedBytes: number; totalBytes: number }) => void,
      signal: AbortSignal,
    ) => Promise<void>,
  ): void {
    const e = this.entries.get(id);
    if (!e) throw modelNotFound(id, this.ids());
    e.pull = { downloadedBytes: 0, totalBytes: 0, running: true };
    e.error = null;
    this.setStateMetric(id, 'pulling');
    const abort = new AbortController();
    const stopAll = () => abort.abort();
    this.pulls.signal.addEventListener('abort', stopAll, { once: true });
    const ended = run((p) => {
      e.pull = { ...p, running: true };
      this.metrics.modelPullProgress.set({ model: id }, p.totalBytes > 0 ? p.downloadedBytes / p.totalBytes : 0);
    }, abort.signal)
      .then(
        () => {
          e.pull = { downloadedBytes: e.pull?.totalBytes ?? 0, totalBytes: e.pull?.totalBytes ?? 0, running: false };
          this.metrics.modelPullProgress.set({ model: id }, 1);
          this.log.info('model pulled', { model: id });
        },
        (err: unknown) => {
          e.pull = e.pull && { ...e.pull, running: false };
          e.error = abort.signal.aborted ? 'the pull was stopped' : err instanceof Error ? err.message : String(err);
          if (!abort.signal.aborted) this.log.error('model pull failed', { model: id, reason: e.error });
        },
      )
      .finally(() => {
        this.pulls.signal.removeEventListener('abort', stopAll);
        e.pullStop = null;
        if (this.entries.get(id) === e) this.setStateMetric(id, entryState(e));
      });
    e.pullStop = { abort, ended };
  }

  /** Removes a model (the admin API): a pull in flight is stopped, the model unloaded; 409 model_busy while a request holds it or it is loading. */
  async remove(id: string): Promise<RegisteredModel> {
    const e = this.entries.get(id);
    if (!e) throw modelNotFound(id, this.ids());
    if (e.loading !== null || !isIdle(e))
      throw conflict(`The model '${id}' is serving requests or loading; try again when it is idle`, 'model_busy');
    if (e.pullStop) {
      e.pullStop.abort.abort();
      await e.pullStop.ended;
    }
    if (!this.entries.has(id)) throw modelNotFound(id, this.ids()); // removed meanwhile by another call
    await this.unload(e, 'removed');
    this.entries.delete(id);
    for (const state of REGISTRY_STATES) this.metrics.modelState.remove({ model: id, state });
    for (const reason of UNLOAD_REASONS) this.metrics.modelUnloads.remove({ model: id, reason });
    return e.model;
  }

  view(id: string): RegistryModelView {
    const e = this.entries.get(id);
    if (!e) throw modelNotFound(id, this.ids());
    return viewOf(e);
  }

  views(): RegistryModelView[] {
    return [...this.entries.values()].map((e) => viewOf(e));
  }

  /** What GET /models shows of each model (id, state, status), at one status copy per model: it is polled. */
  listing(): ModelListing[] {
    return [...this.entries.values()].map((e) => {
      const status = e.engine?.status() ?? e.lastStatus;
      return { id: e.id, state: entryState(e, status), status };
    });
  }

  /** The first model's engine while it has one (GET /health, the serving stats), else null. */
  engineIfLoaded(id: string): ManagedEngine | null {
    return this.entries.get(id)?.engine ?? null;
  }

  /** Every engine loaded now (graceful shutdown drains them). */
  loadedEngines(): ManagedEngine[] {
    return [...this.entries.values()].flatMap((e) => (e.engine ? [e.engine] : []));
  }

  /** Graceful shutdown, step 1: no more loads; a request for a model answers 503 shutting_down (held ones go on). */
  stopLoading(): void {
    this.closed = true;
  }

  /** Unloads every model (shutdown; generations still running are cut by their engines). Idempotent. */
  async dispose(): Promise<void> {
    this.closed = true;
    this.pulls.abort();
    if (this.idleTimer) clearInterval(this.idleTimer);
    await Promise.all([...this.entries.values()].map((e) => (e.engine ? e.engine.dispose() : Promise.resolve())));
  }

  /** The engine a request may be handed: loaded and not being unloaded, and ready (or pulling / failed, which answer for themselves). */
  private servable(e: RegistryEntry): ManagedEngine | null {
    if (e.engine === null || e.unloading !== null) return null;
    const state = e.engine.status().state;
    return state === 'loading' ? null : e.engine;
  }

  private pin(e: RegistryEntry, engine: ManagedEngine): ModelLease {
    return leaseOn(e, engine, () => this.touch(e));
  }

  private touch(e: RegistryEntry): void {
    e.lastUsed = Date.now();
    e.useSeq = ++this.uses;
  }

  /**
   * The one load of `e` in flight, or a new one. Its engine is made at once (its state, pulling or loading, shows
   * from the first moment), then room is made for it, then it starts (pulls if needed, loads in every worker).
   */
  private ensureLoaded(e: RegistryEntry): Promise<void> {
    if (e.loading) return e.loading;
    let engine: ManagedEngine | null = null;
    if (e.unloading === null && e.engine === null && !this.closed) {
      engine = this.createEngine(e.id, e.model);
      e.engine = engine;
    }
    return (e.loading = (async () => {
      try {
        if (engine === null) {
          if (e.unloading) await e.unloading;
          if (e.engine || this.closed) return; // loaded meanwhile, or shutting down
          engine = this.createEngine(e.id, e.model);
          e.engine = engine;
        }
        e.estimateBytes = await countedBytes(e, this.o);
        await this.makeRoom(e);
        if (this.closed) return;
        e.counted = true;
        e.loads++;
        this.metrics.modelLoads.inc({ model: e.id });
        this.metrics.modelMemory.set({ model: e.id }, e.estimateBytes);
        const started = performance.now();
        const measure = this.loadMeasures.begin();
        let grewBy: number | null;
        try {
          await engine.start?.();
        } finally {
          grewBy = measure.end();
        }
        const st = engine.status();
        e.lastStatus = st;
        if (st.state === 'ready' && grewBy !== null) e.measuredBytes = grewBy;
        const counted =
          e.estimateBytes === 0 ? await countedBytes(e, this.o) : Math.max(e.estimateBytes, e.measuredBytes); // a hub model's file is there only now
        if (counted !== e.estimateBytes) {
          e.estimateBytes = counted;
          this.metrics.modelMemory.set({ model: e.id }, e.estimateBytes);
        }
        e.lastUsed = Date.now(); // idle from the end of its load
        if (st.state === 'ready')
          this.log.info('model loaded', {
            model: e.id,
            ms: Math.round(performance.now() - started),
            countedMiB: Math.round(e.estimateBytes / (1 << 20)),
            ...(grewBy === null ? {} : { measuredMiB: Math.round(grewBy / (1 << 20)) }),
            loaded: this.loadedCount(),
          });
      } catch (err) {
        e.error = err instanceof Error ? err.message : String(err);
        this.log.error('model load failed', { model: e.id, reason: e.error });
      } finally {
        e.loading = null;
      }
    })());
  }

  private loadedCount(): number {
    let n = 0;
    for (const e of this.entries.values()) if (e.counted) n++;
    return n;
  }

  /**
   * Waits until `e` fits: fewer than `maxLoaded` models loaded and its estimate within the budget, unloading the
   * least recently used idle models (a failed one first). With nothing idle to unload it waits for one to become
   * idle. A model larger than the whole budget is loaded alone (with a warning).
   */
  private async makeRoom(e: RegistryEntry): Promise<void> {
    for (;;) {
      if (this.closed) return;
      const step = nextRoomStep(e, this.entries.values(), this.o);
      if (step.kind === 'fits') {
        if (step.oversized)
          this.log.warn('model larger than the memory budget: loading it alone', {
            model: e.id,
            estimatedMiB: Math.round(e.estimateBytes / (1 << 20)),
            budgetMiB: Math.round(this.o.memoryBudgetBytes / (1 << 20)),
          });
        return;
      }
      if (step.kind === 'unload') await this.unload(step.victim, step.reason);
      else if (step.unloading) await step.unloading;
      else await new Promise((r) => setTimeout(r, ROOM_POLL_MS));
    }
  }

  private unload(e: RegistryEntry, reason: UnloadReason): Promise<void> {
    if (e.engine === null) return Promise.resolve();
    return (e.unloading ??= (async () => {
      const engine = e.engine!;
      e.lastStatus = engine.status();
      await engine.dispose();
      e.engine = null;
      e.counted = false;
      this.metrics.modelUnloads.inc({ model: e.id, reason });
      this.metrics.modelMemory.set({ model: e.id }, 0);
      this.metrics.promptCacheCapacity.set({ model: e.id }, 0);
      this.log.info('model unloaded', { model: e.id, reason });
    })().finally(() => {
      e.unloading = null;
      this.setStateMetric(e.id, entryState(e));
    }));
  }

  private unloadIdle(): void {
    const now = Date.now();
    for (const e of this.entries.values()) {
      if (
        e.engine &&
        e.unloading === null &&
        e.loading === null &&
        isIdle(e) &&
        now - e.lastUsed >= this.o.idleUnloadMs
      )
        void this.unload(e, 'idle');
    }
  }

  private setStateMetric(id: string, state: RegistryState): void {
    for (const s of REGISTRY_STATES) this.metrics.modelState.set({ model: id, state: s }, s === state ? 1 : 0);
  }
}

/** Why a model was unloaded (hearth_model_unloads_total's `reason`, a closed set). */
const UNLOAD_REASONS = ['idle', 'max_loaded', 'memory', 'failed', 'request', 'removed'] as const;
type UnloadReason = (typeof UNLOAD_REASONS)[number];
