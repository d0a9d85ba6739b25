import { afterAll, beforeAll } from 'vitest';
import {
  loadNativeSlotEngineInternal,
  type NativeSlotEngine,
  type NativeSlotEngineOptions,
} from '../../src/worker/native-slot-engine.ts';

/**
 * Native slot engines on one model for the describe block it is called in: `model` is resolved once before the
 * block's tests, each `load(options)` loads an engine with `defaults` and `options` over them, and every engine loaded
 * is disposed after the block (dispose is idempotent, so a test may dispose one early).
 */
export function useNativeEngines(
  model: () => Promise<string> | string,
  defaults: Omit<NativeSlotEngineOptions, 'modelPath'>,
): (options?: Partial<NativeSlotEngineOptions>) => Promise<NativeSlotEngine> {
  let modelPath: string;
  const engines: NativeSlotEngine[] = [];
  beforeAll(async () => {
    modelPath = await model();
  });
  afterAll(async () => {
    await Promise.all(engines.map((e) => e.dispose()));
  });
  return async (options = {}) => {
    const e = await loadNativeSlotEngineInternal({ modelPath, ...defaults, ...options });
    engines.push(e);
    return e;
  };
}
