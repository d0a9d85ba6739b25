import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { describe, expect, it } from 'vitest';
import type { GenerationHandle, ModelStatus } from '../../../src/engine/generation.ts';
import { type ManagedEngine, ModelRegistry, type ModelRegistryOptions } from '../../../src/engine/model-registry.ts';
import { ApiError } from '../../../src/errors/index.ts';
import { silentLogger } from '../../../src/log/logger.ts';
import { createMetrics, type Metrics } from '../../../src/metrics/metrics.ts';
import { instantModelStatus } from '../../helpers/unit-model-status.ts';

/**
 * The model registry's rules with engines whose start and stop the test releases (no model, no timing): one load
 * however many ask, least recently used idle models unloaded under the limits, never a model someone holds, and a
 * request for a model being unloaded served once it is loaded again.
 */
class GatedEngine implements ManagedEngine {
  state: ModelStatus['state'] = 'loading';
  running = 0;
  disposed = false;
  private openStart: () => void = () => {};
  private openStop: () => void = () => {};
  readonly started: Promise<void>;
  private readonly stopped: Promise<void>;
  constructor(
    readonly modelId: string,
    gated: { start: boolean; stop: boolean },
  ) {
    this.started = gated.start
      ? new Promise((r) => {
          this.openStart = r;
        })
      : Promise.resolve();
    this.stopped = gated.stop
      ? new Promise((r) => {
          this.openStop = r;
        })
      : Promise.resolve();
  }
  /** Whether the registry called start() (its load is under way). */
  starting = false;
  async start(): Promise<void> {
    this.starting = true;
    await this.started;
    this.state = 'ready';
  }
  finishStart(): void {
    this.openStart();
  }
  finishStop(): void {
    this.openStop();
  }
  status(): ModelStatus {
    return instantModelStatus({ state: this.state, modelId: this.modelId });
  }
  load() {
    return { running: this.running, waiting: 0 };
  }
  async drain(): Promise<void> {}
  generate(): GenerationHandle {
    return { cancel: () => {} };
  }
  async dispose(): Promise<void> {
    await this.stopped;
    this.disposed = true;
  }
}

/** The process's RSS as the registry reads it: the test's own figure (a load adds what `loadGrowth` says). */
let fakeRss = 0;
const OPTIONS: ModelRegistryOptions = {
  loadWaitMs: 60_000,
  maxLoaded: 0,
  memoryBudgetBytes: 2 ** 40,
  idleUnloadMs: 0,
  workers: 1,
  slots: 1,
  contextSize: 64,
  modelsDir: '/nonexistent',
  rss: () => fakeRss,
};

function registryOf(ids: string[], options: Partial<ModelRegistryOptions> = {}, gated = { start: false, stop: false }) {
  const made: GatedEngine[] = [];
  const metrics: Metrics = createMetrics();
  const registry = new ModelRegistry(
    { ...OPTIONS, ...options },
    (id) => {
      const engine = new GatedEngine(id, gated);
      made.push(engine);
      return engine;
    },
    metrics,
    silentLogger,
  );
  for (const id of ids) registry.add({ source: { kind: 'local', path: `/nonexistent/${id}.gguf`, modelId: id } });
  const loadsOf = (id: string) => made.filter((e) => e.modelId === id).length;
  const state = (id: string) => registry.view(id).state;
  return { registry, made, loadsOf, state, metrics };
}

const tick = () => new Promise((r) => setTimeout(r, 0));

describe('ModelRegistry', () => {
  it('an unknown model is 404 model_not_found naming model', async () => {
    const { registry } = registryOf(['local/a']);
    const err = await registry.acquire('local/zz').catch((e: unknown) => e);
    expect(err).toBeInstanceOf(ApiError);
    expect(err).toMatchObject({ status: 404, code: 'model_not_found', param: 'model' });
  });

  it('loads a model on first use, once however many requests ask at the same time', async () => {
    const { registry, made, loadsOf, state } = registryOf(['local/a', 'local/b'], {}, { start: true, stop: false });
    expect(state('local/b')).toBe('unloaded');
    const asks = [registry.acquire('local/b'), registry.acquire('local/b'), registry.acquire('local/b')];
    await tick();
    expect(state('local/b')).toBe('loading');
    expect(loadsOf('local/b')).toBe(1);
    made[0]!.finishStart();
    const leases = await Promise.all(asks);
    expect(new Set(leases.map((l) => l.engine)).size).toBe(1);
    expect(loadsOf('local/b')).toBe(1);
    expect(state('local/b')).toBe('ready');
    expect(registry.view('local/b').loads).toBe(1);
  });

  it('past --load-wait-ms a request is 503 model_warming_up with Retry-After, and the load goes on', async () => {
    const { registry, made, state } = registryOf(['local/a'], { loadWaitMs: 10 }, { start: true, stop: false });
    const err = await registry.acquire('local/a').catch((e: unknown) => e);
    expect(err).toMatchObject({ status: 503, code: 'model_warming_up', retryAfter: 120 });
    expect(state('local/a')).toBe('loading');
    made[0]!.finishStart();
    await made[0]!.started;
    await tick();
    expect(state('local/a')).toBe('ready');
  });

  it('unloads the least recently used idle model when --max-loaded-models would be exceeded', async () => {
    const { registry, made, state, metrics } = registryOf(['local/a', 'local/b', 'local/c'], { maxLoaded: 2 });
    (await registry.acquire('local/a')).release();
    (await registry.acquire('local/b')).release();
    (await registry.acquire('local/a')).release(); // a is now more recently used than b
    (await registry.acquire('local/c')).release();
    expect([state('local/a'), state('local/b'), state('local/c')]).toEqual(['ready', 'unloaded', 'ready']);
    expect(made.find((e) => e.modelId === 'local/b')!.disposed).toBe(true);
    expect(await metrics.registry.getSingleMetricAsString('hearth_model_unloads_total')).toContain(
      'hearth_model_unloads_total{model="local/b",reason="max_loaded"} 1',
    );
  });

  it('never unloads a model under a held request: the new load waits until it is released', async () => {
    const { registry, state } = registryOf(['local/a', 'local/b'], { maxLoaded: 1 });
    const held = await registry.acquire('local/a');
    const wantB = registry.acquire('local/b');
    for (let i = 0; i < 5; i++) await new Promise((r) => setTimeout(r, 60));
    expect(state('local/a')).toBe('ready');
    expect(state('local/b')).toBe('loading');
    held.release();
    const b = await wantB;
    expect(state('local/a')).toBe('unloaded');
    expect(state('local/b')).toBe('ready');
    b.release();
  });

  it('nor one whose engine still has a request running or waiting', async () => {
    const { registry, made, state } = registryOf(['local/a', 'local/b'], { maxLoaded: 1 });
    (await registry.acquire('local/a')).release();
    made[0]!.running = 1;
    const wantB = registry.acquire('local/b');
    await new Promise((r) => setTimeout(r, 150));
    expect(state('local/a')).toBe('ready');
    made[0]!.running = 0;
    (await wantB).release();
    expect(state('local/a')).toBe('unloaded');
  });

  it('a request arriving while its model is being unloaded waits for the unload, then is served by a new load', async () => {
    const { registry, made, state, loadsOf } = registryOf(
      ['local/a', 'local/b'],
      { maxLoaded: 1 },
      { start: false, stop: true },
    );
    (await registry.acquire('local/a')).release();
    const wantB = registry.acquire('local/b'); // evicts a; its stop is held open
    await tick();
    expect(state('local/a')).toBe('unloaded');
    const wantA = registry.acquire('local/a'); // arrives during a's eviction
    made[0]!.finishStop();
    const b = await wantB;
    b.release();
    // b is released: a's new load unloads it (b's stop is gated too) and a is served.
    await new Promise((r) => setTimeout(r, 100));
    made[1]!.finishStop();
    const a = await wantA;
    expect(a.engine).toBe(made[2]);
    expect(loadsOf('local/a')).toBe(2);
    expect(state('local/a')).toBe('ready');
    a.release();
  });

  it('unloads under the memory budget, least recently used first', async () => {
    // Files that are no GGUF are estimated at their size: 3 MiB each under a 5 MiB budget is one at a time.
    const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'hearth-registry-'));
    const { registry, state, metrics } = registryOf([], { memoryBudgetBytes: 5 << 20 });
    for (const id of ['local/a', 'local/b']) {
      const file = path.join(dir, `${id.slice(6)}.bin`);
      fs.writeFileSync(file, Buffer.alloc(3 << 20));
      registry.add({ source: { kind: 'local', path: file, modelId: id } });
    }
    (await registry.acquire('local/a')).release();
    expect(registry.view('local/a').memoryBytes).toBe(3 << 20);
    (await registry.acquire('local/b')).release();
    expect([state('local/a'), state('local/b')]).toEqual(['unloaded', 'ready']);
    expect(await metrics.registry.getSingleMetricAsString('hearth_model_unloads_total')).toContain(
      'hearth_model_unloads_total{model="local/a",reason="memory"} 1',
    );
    fs.rmSync(dir, { recursive: true, force: true });
  });

  it('counts a model for what its load was measured to take when that is more than its estimate', async () => {
    // Files that are no GGUF are estimated at their size, 1 MiB each: two fit a 4.5 MiB budget on their estimates.
    // a's load grows the RSS by 4 MiB, so b's load must unload it; a's measure is kept for its next load.
    const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'hearth-registry-'));
    const { registry, made, state, metrics } = registryOf(
      [],
      { memoryBudgetBytes: 4.5 * (1 << 20) },
      { start: true, stop: false },
    );
    for (const id of ['local/a', 'local/b']) {
      const file = path.join(dir, `${id.slice(6)}.bin`);
      fs.writeFileSync(file, Buffer.alloc(1 << 20));
      registry.add({ source: { kind: 'local', path: file, modelId: id } });
    }
    /** Acquires `id` while its engine's start allocates `grow` bytes, then releases it. */
    const load = async (id: string, grow: number) => {
      const held = registry.acquire(id);
      for (let i = 0; i < 200 && !made.some((e) => e.modelId === id && e.starting && e.state === 'loading'); i++)
        await tick();
      fakeRss += grow;
      for (const e of made) if (e.modelId === id) e.finishStart();
      (await held).release();
    };
    await load('local/a', 4 << 20);
    expect(registry.view('local/a').memoryBytes).toBe(4 << 20);
    await load('local/b', 1 << 20);
    expect([state('local/a'), state('local/b')]).toEqual(['unloaded', 'ready']);
    expect(await metrics.registry.getSingleMetricAsString('hearth_model_unloads_total')).toContain(
      'hearth_model_unloads_total{model="local/a",reason="memory"} 1',
    );
    // Loaded again, a is counted for its measure before its load runs: b makes room for it.
    await load('local/a', 0);
    expect([state('local/a'), state('local/b')]).toEqual(['ready', 'unloaded']);
    expect(registry.view('local/a').memoryBytes).toBe(4 << 20);
    fs.rmSync(dir, { recursive: true, force: true });
  });

  it('unloads a model nobody used for --idle-unload-s, and loads it again on the next request', async () => {
    const { registry, state, loadsOf } = registryOf(['local/a'], { idleUnloadMs: 100 });
    (await registry.acquire('local/a')).release();
    for (let i = 0; i < 100 && state('local/a') !== 'unloaded'; i++) await new Promise((r) => setTimeout(r, 50));
    expect(state('local/a')).toBe('unloaded');
    const again = await registry.acquire('local/a');
    expect(loadsOf('local/a')).toBe(2);
    again.release();
  });

  it('keeps a held model loaded past --idle-unload-s', async () => {
    const { registry, state } = registryOf(['local/a'], { idleUnloadMs: 50 });
    const held = await registry.acquire('local/a');
    await new Promise((r) => setTimeout(r, 300));
    expect(state('local/a')).toBe('ready');
    held.release();
  });
});
