import fs from 'node:fs';
import path from 'node:path';
import { Worker } from 'node:worker_threads';
import type { Logger } from '../log/logger.ts';
import { hubEndpoint, hubUnreachableReason, type HubProbe } from './hub-reachability.ts';

const PULL_WORKER_URL = new URL('./model-pull-worker.mjs', import.meta.url);
/** How long a cancelled download may take to close its file before its thread is ended anyway. */
const CANCEL_BOUND_MS = 5_000;

type PullWorkerMessage =
  | { type: 'progress'; downloadedBytes: number; totalBytes: number }
  | { type: 'done'; path: string }
  | { type: 'error'; message: string };

/** Where `--model` points: a local GGUF file or a hub URI pulled into the models dir. */
export type ModelSource =
  { kind: 'local'; path: string; modelId: string } | { kind: 'hub'; uri: string; modelId: string };

export interface PullProgress {
  downloadedBytes: number;
  totalBytes: number;
}

/** The command that serves a local file, as a user types it in the checkout (the hint of every failed pull). */
export const SERVE_LOCAL_HINT =
  'serve a local GGUF file instead: npm start -- --model path/to/model.gguf (none at hand? npm run model:tiny writes a tiny test model)';

export class ModelPullError extends Error {
  override name = 'ModelPullError';
  /**
   * Set when the hub's host could not be resolved or reached: a reason safe to tell clients (a host name and
   * an error code, nothing of the engine's), so chat calls can say why the model is not there.
   */
  unreachable: string | undefined;
  constructor(message: string, unreachable?: string) {
    super(message);
    this.unreachable = unreachable;
  }
}

const HUB_URI = /^hf:([^/\s]+)\/([^/\s]+)\/(.+\.gguf)(#.+)?$/;

/** Parses `--model` (and `--model-id`) into a source. Model ids: `local/<file stem>` or `<user>/<repo>`. */
export function resolveModelSource(model: string, modelIdOverride?: string): ModelSource {
  const hub = HUB_URI.exec(model);
  if (hub) {
    const [, user, repo] = hub;
    return { kind: 'hub', uri: model, modelId: modelIdOverride ?? `${user}/${repo!.replace(/-GGUF$/i, '')}` };
  }
  if (model.startsWith('hf:') || /^https?:\/\//.test(model)) {
    throw new ModelPullError(
      `unsupported model URI '${model}': use hf:<user>/<repo>/<file>.gguf or a local .gguf path`,
    );
  }
  const abs = path.resolve(model);
  const stem = path
    .basename(abs)
    .replace(/\.gguf$/i, '')
    .replace(/[^\w.-]+/g, '-');
  return { kind: 'local', path: abs, modelId: modelIdOverride ?? `local/${stem}` };
}

/** Where pullModel() keeps a hub model in `modelsDir` (node-llama-cpp's name for it: hf_<user>_<file>). */
export function pulledModelPath(source: Extract<ModelSource, { kind: 'hub' }>, modelsDir: string): string {
  const [, user, , file] = HUB_URI.exec(source.uri)!;
  return path.join(modelsDir, `hf_${user}_${path.basename(file!)}`);
}

export interface PullOptions {
  modelsDir: string;
  onProgress: (p: PullProgress) => void;
  /** Give up when no byte arrives for this long. Defaults to 30 s. */
  stallTimeoutMs?: number;
  /** Show node-llama-cpp's progress bar (a terminal is attached). */
  showCliProgress?: boolean;
  /**
   * Aborts the pull (shutdown): the download is cancelled, its sockets closed, and the promise rejects with
   * a ModelPullAborted. The partial file stays under node-llama-cpp's temporary name, never under the
   * final one, so the next start resumes it (or starts over) and never mistakes it for a complete model.
   */
  signal?: AbortSignal;
  /** How the hub's reachability is checked before the pull (tests: then no proxy variable is looked at); the system's DNS and TCP by default. */
  probe?: HubProbe;
}

/** The pull was aborted through its signal (not a failure of the pull itself). */
export class ModelPullAborted extends Error {
  override name = 'ModelPullAborted';
}

/**
 * Ensures a hub model is present in `modelsDir` and returns its path. An already pulled file is reused
 * without network access. Failures (no network, unknown repo, stall) reject with a ModelPullError that
 * says how to serve a local file instead; never hangs.
 */
export async function pullModel(source: Extract<ModelSource, { kind: 'hub' }>, options: PullOptions): Promise<string> {
  // node-llama-cpp stores hf:<user>/<repo>/<file> as hf_<user>_<file>; a file already there is reused offline.
  const existing = pulledModelPath(source, options.modelsDir);
  if (fs.existsSync(existing)) {
    const size = fs.statSync(existing).size;
    options.onProgress({ downloadedBytes: size, totalBytes: size });
    return existing;
  }
  if (options.signal?.aborted) throw new ModelPullAborted('the pull was aborted');
  // An offline machine fails here at once with the reason, not after the downloader's retries and the stall.
  const unreachable = await hubUnreachableReason(hubEndpoint(), options.probe ? { probe: options.probe, env: {} } : {});
  if (options.signal?.aborted) throw new ModelPullAborted('the pull was aborted');
  if (unreachable !== null)
    throw new ModelPullError(`could not pull ${source.uri}: ${unreachable}; ${SERVE_LOCAL_HINT}`, unreachable);
  fs.mkdirSync(options.modelsDir, { recursive: true });
  const stallMs = options.stallTimeoutMs ?? 30_000;
  let timer: NodeJS.Timeout | undefined;
  // Settles on a stall or an abort, whichever comes first; the download itself is raced against it.
  let rejectStall: (e: Error) => void = () => {};
  const stalled = new Promise<never>((_, reject) => {
    rejectStall = reject;
  });
  stalled.catch(() => {});
  const arm = () => {
    clearTimeout(timer);
    timer = setTimeout(() => rejectStall(new ModelPullError(`no progress for ${stallMs / 1000} s`)), stallMs);
  };
  const onAbort = () => rejectStall(new ModelPullAborted('the pull was aborted'));
  options.signal?.addEventListener('abort', onAbort, { once: true });
  // node-llama-cpp's downloader runs in a worker thread (model-pull-worker.mjs): whatever it still has going when
  // the pull gives up (its own retry timers while an unreachable host is tried again) ends with the thread.
  const worker = new Worker(PULL_WORKER_URL, {
    workerData: { uri: source.uri, dirPath: options.modelsDir, showCliProgress: options.showCliProgress ?? false },
  });
  const exited = new Promise<void>((resolve) => worker.once('exit', () => resolve()));
  const pulled = new Promise<string>((resolve, reject) => {
    worker.on('message', (m: PullWorkerMessage) => {
      if (m.type === 'progress') {
        arm();
        options.onProgress({ downloadedBytes: m.downloadedBytes, totalBytes: m.totalBytes });
      } else if (m.type === 'done') {
        resolve(m.path);
        void worker.terminate(); // the file is complete; the thread has nothing left to do
      } else reject(new Error(m.message));
    });
    worker.once('error', reject);
    void exited.then(() => reject(new Error('the download thread ended without a result')));
  });
  pulled.catch(() => {});
  try {
    arm();
    return await Promise.race([pulled, stalled]);
  } catch (err) {
    // The download (if it started) is cancelled, its partial file kept; the thread ends either way.
    worker.postMessage('cancel');
    const bound = setTimeout(() => void worker.terminate(), CANCEL_BOUND_MS);
    await exited;
    clearTimeout(bound);
    if (err instanceof ModelPullAborted) throw err;
    const why = err instanceof Error ? err.message : String(err);
    throw new ModelPullError(`could not pull ${source.uri}: ${why}; ${SERVE_LOCAL_HINT}`);
  } finally {
    clearTimeout(timer);
    options.signal?.removeEventListener('abort', onAbort);
  }
}

/**
 * pullModel for a model's engine: its progress (with the ratio done) handed to `onProgress`, and logged every 10 %
 * unless node-llama-cpp's progress bar shows it.
 */
export function pullModelLogged(
  source: Extract<ModelSource, { kind: 'hub' }>,
  options: Omit<PullOptions, 'onProgress'>,
  log: Logger,
  onProgress: (p: PullProgress & { ratio: number }) => void,
): Promise<string> {
  log.info('pulling model', { model: source.modelId, uri: source.uri, dir: options.modelsDir });
  let lastLogged = 0;
  return pullModel(source, {
    ...options,
    onProgress: ({ downloadedBytes, totalBytes }) => {
      const ratio = totalBytes > 0 ? downloadedBytes / totalBytes : 0;
      onProgress({ downloadedBytes, totalBytes, ratio });
      if (!options.showCliProgress && (ratio - lastLogged >= 0.1 || ratio === 1)) {
        lastLogged = ratio;
        log.info('pull progress', {
          model: source.modelId,
          percent: Math.round(ratio * 100),
          downloadedBytes,
          totalBytes,
        });
      }
    },
  });
}
