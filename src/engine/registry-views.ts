import type { ModelStatus } from './generation.ts';
import type { ModelSource } from './model-source.ts';
import type { UsageView } from './model-usage.ts';
import { entryState, pullPercent, type RegistryEntry } from './registry-entry.ts';
import type { RegistryState } from './registry-state.ts';

/** A model's row in the registry's view (GET /models, the admin API, the dashboard). */
export interface RegistryModelView {
  id: string;
  source: ModelSource;
  state: RegistryState;
  /** The engine's status while loaded, else the last one it had (metadata, context), else null. */
  status: ModelStatus | null;
  /** Estimated memory while loaded (weights + KV cache), else 0. */
  memoryBytes: number;
  /** Pull progress, while pulling or once a pull has run. */
  pull: { downloadedBytes: number; totalBytes: number; percent: number } | null;
  error: string | null;
  requests: { running: number; waiting: number };
  usage: UsageView;
  lastUsedAt: number | null;
  loads: number;
}

/** What GET /models shows of one model (ModelRegistry.listing). */
export type ModelListing = Pick<RegistryModelView, 'id' | 'state' | 'status'>;

/** A model's row: its engine's figures while loaded, else the last ones it had. */
export function viewOf(e: RegistryEntry): RegistryModelView {
  const status = e.engine?.status() ?? e.lastStatus;
  return {
    id: e.id,
    source: e.model.source,
    state: entryState(e, status),
    status,
    memoryBytes: e.counted ? e.estimateBytes : 0,
    pull: e.pull
      ? { downloadedBytes: e.pull.downloadedBytes, totalBytes: e.pull.totalBytes, percent: pullPercent(e.pull) }
      : status?.pull
        ? {
            downloadedBytes: status.pull.downloadedBytes,
            totalBytes: status.pull.totalBytes,
            percent: Math.round(status.pull.ratio * 1000) / 10,
          }
        : null,
    error: e.error ?? (e.engine ? e.engine.status().error : null),
    requests: e.engine ? e.engine.load() : { running: 0, waiting: 0 },
    usage: e.usage.view(),
    lastUsedAt: e.lastUsed === 0 ? null : e.lastUsed,
    loads: e.loads,
  };
}

/** The status of a model with no engine serving (unloaded, being unloaded, pulling, failed): the last one it had, in the registry's state. */
export function statusWhileUnloaded(e: RegistryEntry, defaults: { workers: number; slots: number }): ModelStatus {
  const last = e.lastStatus;
  const pull = e.pull
    ? {
        downloadedBytes: e.pull.downloadedBytes,
        totalBytes: e.pull.totalBytes,
        ratio: e.pull.totalBytes > 0 ? e.pull.downloadedBytes / e.pull.totalBytes : 0,
      }
    : null;
  return {
    state: entryState(e),
    modelId: e.id,
    pull,
    workersReady: 0,
    workers: last?.workers ?? defaults.workers,
    engine: null,
    error: e.error,
    metadata: last?.metadata ?? null,
    contextSize: last?.contextSize ?? null,
    slots: last?.slots ?? e.model.slots ?? defaults.slots,
    threads: last?.threads ?? 0,
    gpu: null,
    readyAt: null,
  };
}
