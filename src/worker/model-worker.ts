import { parentPort } from 'node:worker_threads';
import { workerData } from 'piscina';
import type { ApiErrorData } from '../errors/api-error.ts';
import { contextLengthExceeded } from '../errors/errors.ts';
import type { GenerationTask, MainEvent, ModelWorkerData, WorkerEvent, WorkerStatus } from '../engine/worker-protocol.ts';
import { ModelHost } from './model-host.ts';
import type { SlotJobHandle } from './slot-engine.ts';

/**
 * Piscina worker entry: a long-lived model host (architecture habit 7). The model loads once, when the
 * thread starts; the pool learns of it through a `worker-ready` / `worker-failed` status on parentPort.
 * Each task is one generation whose events flow back on the task's MessagePort; a `cancel` message on
 * that port frees the slot (tasks are never aborted through Piscina, which would kill the thread).
 */
const data = workerData as ModelWorkerData;
let host: ModelHost | null = null;
let loadError: string | null = null;

try {
  host = await ModelHost.load(data);
  const status: WorkerStatus = { hearth: 'worker-ready', engine: host.engine.kind, contextSize: host.engine.contextSize, slots: host.engine.slotCount, threads: data.threads, ...(host.fallbackReason ? { fallbackReason: host.fallbackReason } : {}) };
  parentPort?.postMessage(status);
} catch (err) {
  loadError = err instanceof Error ? err.message : String(err);
  parentPort?.postMessage({ hearth: 'worker-failed', reason: loadError } satisfies WorkerStatus);
}

/** A grammar llama.cpp refuses is the request's (400); anything else the engine reports is a 500. */
function engineErrorData(e: { message: string; code: string }): ApiErrorData {
  if (e.code === 'invalid_grammar') return { status: 400, type: 'invalid_request_error', message: `The requested output format cannot be enforced: ${e.message}`, code: 'invalid_grammar', param: null };
  return { status: 500, type: 'server_error', message: e.message, code: e.code, param: null };
}

export default async function generate(task: GenerationTask): Promise<void> {
  const port = task.port;
  const post = (e: WorkerEvent) => port.postMessage(e);
  let handle: SlotJobHandle | null = null;
  let cancelled = false;
  port.on('message', (m: MainEvent) => {
    if (m.t === 'cancel') {
      cancelled = true;
      handle?.cancel();
    }
  });
  try {
    if (!host) throw new Error(`model not loaded: ${loadError ?? 'unknown error'}`);
    post({ t: 'start' });
    // Let a cancel that arrived while the task was queued be seen before any work.
    await new Promise((r) => setImmediate(r));
    if (cancelled) return post({ t: 'done', finishReason: 'cancelled', promptTokens: 0, cachedTokens: 0, completionTokens: 0 });
    const engine = host.engine;
    const prompt = host.buildPrompt(task.messages, task.tools);
    if (prompt.tokens.length + 1 > engine.contextSize) {
      return post({ t: 'error', error: contextLengthExceeded(prompt.tokens.length, engine.contextSize).toData() });
    }
    const maxTokens = Math.max(1, Math.min(task.maxTokens ?? Number.MAX_SAFE_INTEGER, engine.contextSize - prompt.tokens.length));
    const stop = [...new Set([...task.stop, ...prompt.stops])];
    await new Promise<void>((resolve) => {
      handle = engine.submit(
        {
          promptTokens: prompt.tokens, maxTokens, stop, sampling: task.sampling,
          ...(task.grammar !== undefined ? { grammar: task.grammar } : {}),
          ...(task.topLogprobs !== undefined ? { topLogprobs: task.topLogprobs } : {}),
        },
        {
          onPrompt: (info) => post({ t: 'prompt', ...info }),
          onText: (text, n, logprobs) => post(logprobs ? { t: 'text', text, n, logprobs } : { t: 'text', text, n }),
          onDone: (r) => { post({ t: 'done', ...r }); resolve(); },
          onError: (e) => { post({ t: 'error', error: engineErrorData(e) }); resolve(); },
        },
      );
      if (cancelled) handle.cancel();
    });
  } catch (err) {
    post({ t: 'error', error: { status: 500, type: 'server_error', message: err instanceof Error ? err.message : String(err), code: 'engine_error', param: null } });
  }
  // The main thread closes the port after the terminal event (closing here could drop queued events).
}
