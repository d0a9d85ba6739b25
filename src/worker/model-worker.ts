import { BroadcastChannel, parentPort, threadId } from 'node:worker_threads';
import { workerData } from 'piscina';
import { ApiError } from '../errors/api-error.ts';
import { engineFailure, type EngineFailure } from '../errors/engine-failure.ts';
import type {
  GenerationTask,
  MainEvent,
  ModelWorkerData,
  WorkerEvent,
  WorkerStatus,
  WorkerStop,
} from '../engine/worker-protocol.ts';
import { ModelHost } from './model-host.ts';
import type { NativeSlotEngine } from './native-slot-engine.ts';
import { InvalidPromptToken, PromptTooLong } from './prompt-tokenizer.ts';
import type { SlotJobHandle } from './slot-engine.ts';
import type { EmbeddingTask, EmbeddingTaskResult } from '../engine/embedding-task.ts';
import { KvUseReporter } from './kv-use-reporter.ts';

/**
 * Piscina worker entry: a long-lived model host (architecture habit 7). The model loads once, when the
 * thread starts; the pool learns of it through a `worker-ready` / `worker-failed` status on parentPort.
 * Each task is one generation whose events flow back on the task's MessagePort (or, for a native job with
 * task.relay, straight from the loop thread to the main thread's relay); a `cancel` message on that port
 * frees the slot (tasks are never aborted through Piscina, which would kill the thread). Before the pool
 * terminates the thread, WorkerStop (worker-protocol.ts) has it release its model.
 */
const data = workerData as ModelWorkerData;
let host: ModelHost | null = null;
let loadError: string | null = null;
let loadSettled = false;
/** Aborted by WorkerStop: a load still running stops there (ModelHost.load releases what it had loaded). */
const loadAbort = new AbortController();
/** The native loop's KV cell use, to the main thread while jobs run (null for the other engines). */
let kvUse: KvUseReporter | null = null;

const loading = (async () => {
  try {
    host = await ModelHost.load(data, loadAbort.signal);
    const status: WorkerStatus = {
      hearth: 'worker-ready',
      engine: host.engine.kind,
      contextSize: host.engine.contextSize,
      slots: host.engine.slotCount,
      threads: host.compute?.threads ?? data.threads,
      ...(host.fallbackReason ? { fallbackReason: host.fallbackReason } : {}),
      ...(host.compute
        ? {
            compute: {
              threadPool: host.compute.threadPool,
              cpuBackend: host.compute.cpuBackend,
              ...(host.compute.calibration ? { calibration: host.compute.calibration } : {}),
              ...(host.compute.calibrationStep ? { calibrationStep: host.compute.calibrationStep } : {}),
            },
          }
        : {}),
      ...(host.gpu ? { gpu: host.gpu } : {}),
    };
    parentPort?.postMessage(status);
    if (host.engine.kind === 'native') {
      const native = host.engine as unknown as NativeSlotEngine;
      kvUse = new KvUseReporter(
        () => {
          const st = native.stats();
          return { used: st.kvCellsUsed, total: st.kvCellsTotal };
        },
        (use) => parentPort?.postMessage({ hearth: 'kv-cache', worker: threadId, ...use } satisfies WorkerStatus),
      );
      kvUse.sample();
    }
  } catch (err) {
    loadError = err instanceof Error ? err.message : String(err);
    // A load stopped on purpose is no failure to report.
    if (!loadAbort.signal.aborted)
      parentPort?.postMessage({ hearth: 'worker-failed', reason: loadError } satisfies WorkerStatus);
  } finally {
    loadSettled = true;
  }
})();

// WorkerStop: a load still running is aborted, then the model released; the thread is terminated after the answer.
const stops = new BroadcastChannel(data.stopChannel);
stops.unref();
stops.onmessage = (m) => {
  if ((m as { data?: WorkerStop }).data?.t !== 'stop') return;
  stops.close();
  const midLoad = !loadSettled;
  loadAbort.abort(new Error('the model worker is stopping'));
  void loading
    .then(() => host?.dispose())
    .catch(() => {}) // a failed release still ends in the answer: the owner terminates the thread either way
    .then(() =>
      parentPort?.postMessage({
        hearth: 'worker-stopped',
        loadAborted: midLoad && host === null,
      } satisfies WorkerStatus),
    );
};

await loading;

export default async function generate(task: GenerationTask): Promise<void> {
  const port = task.port;
  const post = (e: WorkerEvent) => port.postMessage(e);
  let handle: SlotJobHandle | null = null;
  let cancelled = false;
  let promptSize: { tokens: number; contextSize: number } | null = null;
  port.on('message', (m: MainEvent) => {
    if (m.t === 'cancel') {
      cancelled = true;
      handle?.cancel();
    } else if (m.t === 'yield') {
      handle?.yieldSlot?.();
    }
  });
  try {
    if (!host) throw new Error(`model not loaded: ${loadError ?? 'unknown error'}`);
    if (host.embeddingsOnly)
      return post({
        t: 'error',
        failure: engineFailure.internal('model_embeddings_only', 'the model serves embeddings only'),
      });
    post({ t: 'start' });
    // Let a cancel that arrived while the task was queued be seen before any work.
    await new Promise((r) => setImmediate(r));
    if (cancelled)
      return post({ t: 'done', finishReason: 'cancelled', promptTokens: 0, cachedTokens: 0, completionTokens: 0 });
    const engine = host.engine;
    // A prompt may use contextSize - 1 tokens (one is left to generate); tokenizing stops past that.
    const building =
      task.prompt !== null
        ? host.buildRawPrompt(task.prompt, engine.contextSize - 1)
        : host.buildPrompt(task.messages, task.tools, engine.contextSize - 1, task.promptSuffix);
    const prompt = await building.catch((err: unknown) => {
      if (err instanceof PromptTooLong || err instanceof InvalidPromptToken) return err;
      throw err;
    });
    if (prompt instanceof InvalidPromptToken)
      return post({ t: 'error', failure: engineFailure.internal('invalid_prompt_token', prompt) });
    if (prompt instanceof PromptTooLong) {
      return post({
        t: 'error',
        failure: engineFailure.contextLengthExceeded(prompt.atLeastTokens, engine.contextSize, true),
      });
    }
    // A raw prompt of no tokens ('' for a vocabulary without BOS) leaves nothing to continue from.
    if (prompt.tokens.length === 0)
      return post({ t: 'error', failure: engineFailure.internal('empty_prompt', 'the prompt has no tokens') });
    if (cancelled)
      return post({ t: 'done', finishReason: 'cancelled', promptTokens: 0, cachedTokens: 0, completionTokens: 0 });
    if (task.countOnly)
      return post({
        t: 'done',
        finishReason: 'stop',
        promptTokens: prompt.tokens.length,
        cachedTokens: 0,
        completionTokens: 0,
      });
    promptSize = { tokens: prompt.tokens.length, contextSize: engine.contextSize };
    // The job as the engine resolved it; the chat template's own stop texts (known only here) join its stops.
    const job =
      prompt.stops.length === 0 ? task.job : { ...task.job, stops: [...new Set([...task.job.stops, ...prompt.stops])] };
    // Relayed: the job's events reach the main thread from the loop thread; here it only ends.
    const relay = engine.relaysEvents && task.relay !== null ? task.relay : undefined;
    await new Promise<void>((resolve) => {
      handle = engine.submit(
        prompt.tokens,
        job,
        {
          onPrompt: (info) => post({ t: 'prompt', ...info }),
          onText: (text, n, logprobs) => post(logprobs ? { t: 'text', text, n, logprobs } : { t: 'text', text, n }),
          onDone: (r) => {
            if (!relay) post({ t: 'done', ...r });
            resolve();
          },
          onError: (e) => {
            if (!relay) post({ t: 'error', failure: engineFailure.internal(e.code, e.message) });
            resolve();
          },
        },
        relay,
      );
      kvUse?.jobStarted();
      if (cancelled) handle.cancel();
    });
    kvUse?.jobEnded();
    reportNativeStats(engine);
  } catch (err) {
    post({ t: 'error', failure: failureOf(err, promptSize) });
  }
  // The main thread closes the port after the terminal event (closing here could drop queued events).
}

/**
 * The native loop's figures to the main thread's metrics after each job: its host prompt cache (hearth_prompt_cache_*)
 * and its preemptions (hearth_preemptions_total, parked jobs in the gauges), one stats() read for both messages.
 */
function reportNativeStats(engine: ModelHost['engine']): void {
  if (engine.kind !== 'native') return;
  const st = (engine as unknown as NativeSlotEngine).stats();
  parentPort?.postMessage({
    hearth: 'prompt-cache',
    worker: threadId,
    lookups: st.promptCacheLookups,
    hits: st.promptCacheRestores,
    bytes: st.promptCacheBytes,
    entries: st.promptCacheEntries,
  } satisfies WorkerStatus);
  parentPort?.postMessage({
    hearth: 'preemptions',
    worker: threadId,
    preemptions: st.preemptions,
    parked: st.parked,
  } satisfies WorkerStatus);
}

/** A thrown error as it crosses to the main thread: a code, with the message for the log only. */
function failureOf(err: unknown, prompt: { tokens: number; contextSize: number } | null): EngineFailure {
  // The only ApiError a worker throws is the engine's context_length_exceeded (native-slot-engine.ts submit).
  if (err instanceof ApiError && err.code === 'context_length_exceeded')
    return prompt
      ? engineFailure.contextLengthExceeded(prompt.tokens, prompt.contextSize)
      : engineFailure.internal('context_length_exceeded', err);
  return engineFailure.internal('engine_error', err);
}

/**
 * Piscina task `embed` (the pool runs it with `{ name: 'embed' }`): the inputs' unit vectors, tokenized with this
 * worker's vocabulary (ModelHost.embed); an input that is too long or holds a token outside the vocabulary is
 * answered as a refusal, not thrown; a request whose client left (`task.cancel` set) answers `cancelled`.
 */
export async function embed(task: EmbeddingTask): Promise<EmbeddingTaskResult> {
  if (!host) throw new Error(`model not loaded: ${loadError ?? 'unknown error'}`);
  const flag = task.cancel ? new Int32Array(task.cancel) : null;
  return host.embed(task.inputs, flag ? () => Atomics.load(flag, 0) !== 0 : undefined);
}
