import type { Llama, LlamaModel } from 'node-llama-cpp';
import type { TokenLogprob } from '../../src/protocol/chat-delta.ts';
import { LlamaSequenceEngine } from '../../src/worker/llama-sequence-engine.ts';
import { loadNativeSlotEngine, nativeAddonAvailable } from '../../src/worker/native-slot-engine.ts';
import type { SlotEngine, SlotJobResult } from '../../src/worker/slot-engine.ts';
import { submitJob, type TestJob } from './generation-job.ts';

/**
 * Model-level tests that run the same jobs on both token engines: a model loaded once, a node-llama-cpp
 * engine on it and (where the addon is built) a native engine on the same file. In CI the addon must exist.
 */
export interface EngineSubject {
  name: string;
  model: LlamaModel;
  engines: Array<[string, SlotEngine]>;
  /** BOS + "Once upon a time". */
  prompt: Uint32Array;
}

/** What one job delivered: its text, its logprobs (if asked), and how it ended. */
export interface JobRun {
  text: string;
  logprobs: TokenLogprob[];
  result?: SlotJobResult;
  error?: { code: string; message: string };
}

/** Submits `job` and resolves at its terminal callback; never rejects. */
export function collectJob(engine: SlotEngine, job: TestJob): Promise<JobRun> {
  return new Promise((done) => {
    const r: JobRun = { text: '', logprobs: [] };
    submitJob(engine, job, {
      onText: (t, _n, lp) => {
        r.text += t;
        if (lp) r.logprobs.push(...lp);
      },
      onDone: (result) => done({ ...r, result }),
      onError: (error) => done({ ...r, error }),
    });
  });
}

/** Loads each [name, path] with both engines (`slots` sequences of `contextSize` tokens, 1 thread). */
export async function loadEngineSubjects(
  llama: Llama,
  paths: Array<[string, string]>,
  o: { contextSize: number; slots: number },
): Promise<EngineSubject[]> {
  const native = nativeAddonAvailable();
  if (!native.ok && process.env.CI) throw new Error(`native addon missing in CI: ${native.reason}`);
  const subjects: EngineSubject[] = [];
  for (const [name, path] of paths) {
    const model = await llama.loadModel({ modelPath: path });
    const engines: EngineSubject['engines'] = [
      [
        'node-llama-cpp',
        await LlamaSequenceEngine.load({
          model,
          contextSize: o.contextSize,
          slots: o.slots,
          threads: 1,
          batchSize: 256,
        }),
      ],
    ];
    if (native.ok)
      engines.push([
        'native',
        await loadNativeSlotEngine({
          modelPath: path,
          contextSize: o.contextSize,
          slots: o.slots,
          threads: 1,
          batchSize: 256,
        }),
      ]);
    subjects.push({ name, model, engines, prompt: Uint32Array.from(model.tokenize('Once upon a time', true)) });
  }
  return subjects;
}

export async function disposeEngineSubjects(subjects: readonly EngineSubject[]): Promise<void> {
  for (const s of subjects) {
    for (const [, e] of s.engines) await e.dispose();
    await s.model.dispose();
  }
}
