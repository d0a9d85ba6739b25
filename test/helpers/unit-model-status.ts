import type { ModelStatus } from '../../src/engine/generation.ts';

/**
 * The ModelStatus of a ready `instant` engine serving 'local/m' on one worker with one slot (no pull, GPU, error or
 * metadata), for fakes that report a status; `fields` replace any of it.
 */
export function instantModelStatus(fields: Partial<ModelStatus> = {}): ModelStatus {
  return {
    state: 'ready',
    modelId: 'local/m',
    pull: null,
    workersReady: 1,
    workers: 1,
    engine: 'instant',
    error: null,
    metadata: null,
    contextSize: 64,
    slots: 1,
    threads: 1,
    gpu: null,
    readyAt: null,
    ...fields,
  };
}
