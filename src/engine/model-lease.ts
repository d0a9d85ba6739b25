import type { ManagedEngine, RegistryEntry } from './registry-entry.ts';

/**
 * One request's handle on its model, from acquire() to its answer's end: the engine it is served by (looked up
 * once), where its usage is recorded, and the hold that keeps the model loaded until release() (idempotent).
 */
export interface ModelLease {
  readonly engine: ManagedEngine;
  /** Records a finished generation's completion tokens for the model's figures (the dashboard's requests and tokens/s). */
  recordUsage(completionTokens: number): void;
  release(): void;
}

/**
 * A lease on `e` served by `engine`: it counts as one of the entry's pins (the registry never unloads a pinned
 * model) until its first release(), which then calls `onRelease` (the registry marks the model used). Main thread.
 */
export function leaseOn(e: RegistryEntry, engine: ManagedEngine, onRelease: () => void): ModelLease {
  e.pins++;
  let held = true;
  return {
    engine,
    recordUsage: (completionTokens) => e.usage.record(completionTokens),
    release: () => {
      if (!held) return;
      held = false;
      e.pins--;
      onRelease();
    },
  };
}
