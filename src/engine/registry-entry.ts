import type { EmbeddingEngine } from './embedding.ts';
import type { ChatEngine, ModelStatus } from './generation.ts';
import type { ModelSource } from './model-source.ts';
import type { ModelUsage } from './model-usage.ts';
import type { RegistryState } from './registry-state.ts';

/** One model the registry knows: its id and source, and where its slots and context differ from the server's. */
export interface RegisteredModel {
  source: ModelSource;
  slots?: number | undefined;
  contextSize?: number | undefined;
  gpuLayers?: 'auto' | number | undefined;
}

/** What the registry needs of a loaded model: serving, its status, and a start and a stop (LocalEngine). */
export type ManagedEngine = ChatEngine & Partial<EmbeddingEngine> & { start?(): Promise<void> };

/** One entry: the model, its engine while loaded, and what guards its unloading. */
export interface RegistryEntry {
  id: string;
  model: RegisteredModel;
  engine: ManagedEngine | null;
  /** The load in flight (making room, pulling, loading): one per model, however many requests wait on it. */
  loading: Promise<void> | null;
  unloading: Promise<void> | null;
  /** Leases held: requests between their admission and their last byte. A pinned model is never unloaded. */
  pins: number;
  /** When it was last acquired or released (ms since epoch; the idle rule), and the order of that (the LRU rule). */
  lastUsed: number;
  useSeq: number;
  /** What it is counted for against the budget: the estimate, or what its last load was measured to take if more. */
  estimateBytes: number;
  /** The process's RSS growth over its last load that no other load overlapped (0: never measured). */
  measuredBytes: number;
  /** Its load made room for it (makeRoom passed) and it has not been unloaded since: it counts against the limits. */
  counted: boolean;
  lastStatus: ModelStatus | null;
  /** A pull started by pull() (the admin API), while it runs or after it failed. */
  pull: { downloadedBytes: number; totalBytes: number; running: boolean } | null;
  /** Stops the pull in flight (remove()), and its end. */
  pullStop: { abort: AbortController; ended: Promise<void> } | null;
  error: string | null;
  loads: number;
  usage: ModelUsage;
}

export const REGISTRY_STATES: readonly RegistryState[] = ['unloaded', 'pulling', 'loading', 'ready', 'failed'];

/** An entry's state; `status`: its engine's, when the caller has it already. */
export function entryState(e: RegistryEntry, status?: ModelStatus | null): RegistryState {
  if (e.pull?.running) return 'pulling';
  if (e.error !== null) return 'failed';
  if (e.unloading !== null) return 'unloaded';
  if (e.engine) return (status ?? e.engine.status()).state;
  return e.loading !== null ? 'loading' : 'unloaded';
}

/** A pull's progress in percent, one decimal. */
export function pullPercent(p: { downloadedBytes: number; totalBytes: number }): number {
  return p.totalBytes > 0 ? Math.round((p.downloadedBytes / p.totalBytes) * 1000) / 10 : 0;
}
