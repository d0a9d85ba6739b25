/**
 * A model worker asked to stop while its model loads abandons the load (ModelHost.load with a signal):
 * the load rejects with the stop's reason and holds nothing, so the worker can answer at once instead of
 * waiting out a long load, and its thread is never terminated under llama.cpp work in flight (which aborts
 * the process). Engines: node-llama-cpp, and the native loop when its addon is built.
 */
import { describe, expect, it } from 'vitest';
import { ensureTinyChatModel } from '../../models/test-model-path.ts';
import type { ModelWorkerData } from '../../src/engine/worker-protocol.ts';
import { TEST_NATIVE_TUNING } from '../helpers/native-tuning.ts';
import { ModelHost } from '../../src/worker/model-host.ts';
import {
  loadNativeSlotEngineInternal,
  nativeAddonAvailable,
  type NativeSlotEngine,
} from '../../src/worker/native-slot-engine.ts';

const addon = nativeAddonAvailable();

async function workerData(engine: ModelWorkerData['engine']): Promise<ModelWorkerData> {
  return {
    engine,
    modelPath: await ensureTinyChatModel(),
    contextSize: 256,
    slots: 1,
    threads: 1,
    fallbackThreads: 1,
    batchSize: 64,
    native: TEST_NATIVE_TUNING,
    calibrateCores: 0,
    cpuKernels: 'prebuilt',
    stopChannel: 'unused',
  };
}

describe.each([
  ['node-llama-cpp' as const, ''],
  ['native' as const, addon.ok ? '' : `native addon unavailable: ${addon.reason}`],
])('ModelHost.load aborted (%s)', (kind, skip) => {
  it.skipIf(skip !== '')("rejects with the stop's reason when the stop comes while it loads", async () => {
    const data = await workerData(kind);
    const stop = new AbortController();
    const reason = new Error('the model worker is stopping');
    const load = ModelHost.load(data, stop.signal);
    stop.abort(reason); // the load has only just begun: its first step is awaiting
    await expect(load).rejects.toBe(reason);
  });

  it.skipIf(skip !== '')(
    'stopped anywhere in the load, rejects with the reason or (too late) hands over a host; a later load works',
    async () => {
      const data = await workerData(kind);
      const startedAt = performance.now();
      await (await ModelHost.load(data)).dispose();
      const loadMs = performance.now() - startedAt;
      // Stops spread over a whole load's duration: each lands in some part (the runtime, the model, the context,
      // or between two), which must be released; a stop after the load's end finds the host complete.
      let rejected = 0;
      for (const fraction of [0, 0.3, 0.6, 0.8, 0.9, 0.95, 1, 1.2]) {
        const stop = new AbortController();
        const reason = new Error(`stopped at ${fraction} of a load`);
        const load = ModelHost.load(data, stop.signal);
        await new Promise((r) => setTimeout(r, fraction * loadMs));
        stop.abort(reason);
        const outcome = await load.then(
          (host) => host,
          (err: unknown) => err,
        );
        if (outcome instanceof ModelHost) await outcome.dispose();
        else {
          expect(outcome).toBe(reason);
          rejected++;
        }
      }
      expect(rejected).toBeGreaterThan(0);
      const host = await ModelHost.load(data);
      expect(host.engine.slotCount).toBe(1);
      await host.dispose();
    },
  );
});

describe.skipIf(!addon.ok)('native loop load aborted', () => {
  it('disposes the loop: the load rejects with the reason, or, done before the stop was seen, hands over an engine that disposes', async () => {
    const stop = new AbortController();
    const reason = new Error('stop');
    const load = loadNativeSlotEngineInternal(
      { modelPath: await ensureTinyChatModel(), contextSize: 256, slots: 1, threads: 1 },
      stop.signal,
    );
    stop.abort(reason); // the loop thread is loading now
    const outcome = await load.then(
      (engine: NativeSlotEngine) => engine,
      (err: unknown) => err,
    );
    if (outcome === reason) return;
    expect(outcome).toHaveProperty('dispose');
    await (outcome as NativeSlotEngine).dispose();
  });
});
