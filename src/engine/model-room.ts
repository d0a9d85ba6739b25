import { modelMemoryEstimate } from './model-memory-estimate.ts';
import { pulledModelPath } from './model-source.ts';
import type { RegistryEntry } from './registry-entry.ts';

/**
 * The registry's budget rules (contract.md "Several models on one server"): what a model is counted for, when it
 * is idle, and what must happen before another model fits under `--max-loaded-models` and `--model-memory-mib`.
 * Pure decisions over the registry's entries; the registry (model-registry.ts, main thread) acts on them.
 */
export interface RoomLimits {
  /** Most models loaded at once; 0: no limit but the memory budget. */
  maxLoaded: number;
  memoryBudgetBytes: number;
}

/** What makeRoom does next for one model: load it (alone, over the budget, when `oversized`), unload a victim, or wait. */
export type RoomStep =
  | { kind: 'fits'; oversized: boolean }
  | { kind: 'unload'; victim: RegistryEntry; reason: 'max_loaded' | 'memory' }
  | { kind: 'wait'; unloading: Promise<void> | null };

/** Nothing holds it: no lease, no request running or waiting in its engine. */
export function isIdle(e: RegistryEntry): boolean {
  if (e.pins > 0) return false;
  const load = e.engine?.load();
  return load === undefined || load.running + load.waiting === 0;
}

/**
 * The next step for `e` to fit beside the counted models of `entries`: fewer than `maxLoaded` loaded and its
 * estimate within the budget, else the least recently used idle model unloaded (a failed one first), else a wait for
 * an unload in flight or for one to become idle. A model larger than the whole budget fits alone.
 */
export function nextRoomStep(e: RegistryEntry, entries: Iterable<RegistryEntry>, limits: RoomLimits): RoomStep {
  const others = [...entries].filter((o) => o !== e && o.counted);
  const used = others.reduce((sum, o) => sum + o.estimateBytes, 0);
  const overCount = limits.maxLoaded > 0 && others.length + 1 > limits.maxLoaded;
  const overMemory = others.length > 0 && used + e.estimateBytes > limits.memoryBudgetBytes;
  if (!overCount && !overMemory) return { kind: 'fits', oversized: e.estimateBytes > limits.memoryBudgetBytes };
  const candidates = others.filter((o) => o.unloading === null && o.loading === null && isIdle(o));
  const failed = candidates.find((o) => o.engine!.status().state === 'failed');
  const victim = failed ?? candidates.sort((a, b) => a.useSeq - b.useSeq)[0];
  if (victim) return { kind: 'unload', victim, reason: overCount ? 'max_loaded' : 'memory' };
  return { kind: 'wait', unloading: others.find((o) => o.unloading !== null)?.unloading ?? null };
}

/**
 * What the model is counted for: its estimate (model-memory-estimate.ts, with its own slots and context), or what
 * an earlier load of it was measured to take when that is more (the estimate leaves out compute buffers and the
 * workers' own memory: a measured load took about four times its file).
 */
export async function countedBytes(
  e: RegistryEntry,
  defaults: { contextSize: number; slots: number; workers: number; modelsDir: string },
): Promise<number> {
  const file =
    e.model.source.kind === 'local' ? e.model.source.path : pulledModelPath(e.model.source, defaults.modelsDir);
  const estimated = await modelMemoryEstimate(file, {
    contextSize: e.model.contextSize ?? defaults.contextSize,
    slots: e.model.slots ?? defaults.slots,
    workers: defaults.workers,
  });
  return Math.max(estimated, e.measuredBytes);
}
