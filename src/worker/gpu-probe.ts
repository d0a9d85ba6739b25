import { serveProbe } from './probe-main.ts';
import { cudaBackendCandidates } from '../../native/paths.ts';
import type { GpuProbeAnswer, GpuProbeRequest } from '../engine/worker-protocol.ts';
import { loadNativeSlotEngineInternal } from './native-slot-engine.ts';
import type { GenerationJob } from '../../native/generation-job.ts';
import { samplingFor } from '../engine/sampling-defaults.ts';

/** A short greedy completion. */
const PROBE_JOB: GenerationJob = {
  maxTokens: 8,
  stops: [],
  sampling: samplingFor({ temperature: 0, stop: [] }, () => 1),
  grammar: '',
  topLogprobs: -1,
  cachePartition: '',
};

/**
 * The GPU probe, a child process of engine/gpu-offload.ts (entry: gpu-probe-entry.mjs): loads the ggml GPU
 * backend library, offloads the model and decodes a short greedy completion, so a backend that aborts the
 * process on its first kernel takes only this process down. Protocol: GpuProbeRequest in argv[2], one
 * GpuProbeAnswer line on stdout, exit code 0 (an answer with ok false is a clean refusal: no library, no device).
 * `list` names the candidate libraries (native/paths.ts cudaBackendCandidates: --gpu-backend, else this machine's
 * build, else node-llama-cpp's prebuilt CUDA package), as only the worker side may look into native/.
 */
async function answer(req: GpuProbeRequest): Promise<GpuProbeAnswer> {
  if (req.action === 'list') return { libraries: cudaBackendCandidates(req.explicit) };
  let engine;
  try {
    engine = await loadNativeSlotEngineInternal({
      modelPath: req.modelPath,
      contextSize: 64,
      slots: 1,
      threads: 2,
      batchSize: 16,
      promptCacheMiB: 0,
      gpuBackend: req.library,
      gpuLayers: req.layers,
    });
  } catch (err) {
    const reason = err instanceof Error ? err.message : String(err);
    return { ok: false, reason, sawDevice: !/could not load the GPU backend|found no GPU device/.test(reason) };
  }
  try {
    const device = engine.loaded.gpuDevices[0];
    if (!device || engine.loaded.gpuLayers === 0)
      return { ok: false, reason: 'the model was not offloaded', sawDevice: device !== undefined };
    const started = performance.now();
    const done = await new Promise<{ completionTokens: number }>((resolve, reject) => {
      engine.submit(new Uint32Array([1, 2, 3, 4]), PROBE_JOB, {
        onText: () => {},
        onDone: (r) => resolve({ completionTokens: r.completionTokens }),
        onError: (e) => reject(new Error(`${e.code}: ${e.message}`)),
      });
    });
    return {
      ok: true,
      device,
      gpuLayers: engine.loaded.gpuLayers,
      modelLayers: engine.loaded.modelLayers,
      decodeMs: performance.now() - started,
      completionTokens: done.completionTokens,
    };
  } finally {
    await engine.dispose();
  }
}

serveProbe(answer);
