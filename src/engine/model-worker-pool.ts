import { randomUUID } from 'node:crypto';
import { BroadcastChannel } from 'node:worker_threads';
import { Piscina } from 'piscina';
import { waitFor } from '../lifecycle/wait-for.ts';
import type { Logger } from '../log/logger.ts';
import type { EmbeddingTask, EmbeddingTaskResult } from './embedding-task.ts';
import type { GenerationTask, ModelWorkerData, WorkerStatus, WorkerStop } from './worker-protocol.ts';

/** A worker that loaded the model. */
export type WorkerReady = Extract<WorkerStatus, { hearth: 'worker-ready' }>;
/** A worker's figures after a job (prompt cache, KV cells, preemptions): worker-reports.ts meters them. */
export type WorkerReport = Extract<WorkerStatus, { hearth: 'prompt-cache' | 'kv-cache' | 'preemptions' }>;

/** What the pool tells its owner, on the main thread. */
export interface WorkerPoolListener {
  ready(m: WorkerReady): void;
  /** A worker could not load the model. */
  loadFailed(reason: string): void;
  /** A worker thread failed (Piscina's 'error'). */
  workerError(err: Error): void;
  report(m: WorkerReport): void;
}

export interface ModelWorkerPoolOptions {
  workers: number;
  /** Sequences per worker: the pool runs up to twice as many tasks per worker (a batch job yields its slot). */
  slots: number;
  queueLimit: number;
  workerData: Omit<ModelWorkerData, 'stopChannel'>;
}

/** A JS shim that registers the TypeScript loader inside the worker, then loads model-worker.ts. */
const WORKER_URL = new URL('../worker/model-worker-entry.mjs', import.meta.url);

/**
 * One model's worker threads (Piscina): started with the model's workerData, each loads the model and reports on
 * the pool's 'message' channel. Runs generation tasks (a port each) and `embed` tasks; nothing waits in Piscina's
 * own queue (admission.ts hands over only what the slots take). Stopped by stop(): WorkerStop on a broadcast
 * channel, then the threads are terminated. Single owner: LocalEngine, main thread.
 */
export class ModelWorkerPool {
  private readonly pool: Piscina<GenerationTask, void>;
  /** Where stop() sends WorkerStop, and the workers that answered it. */
  private readonly stopChannel = `hearth-model-workers:${randomUUID()}`;
  private workersStopped = 0;
  /** Workers whose model load was abandoned by the stop. */
  private loadsAborted = 0;

  constructor(
    private readonly o: ModelWorkerPoolOptions,
    listener: WorkerPoolListener,
    private readonly log: Logger,
  ) {
    this.pool = new Piscina<GenerationTask, void>({
      filename: WORKER_URL.href,
      minThreads: o.workers,
      maxThreads: o.workers,
      // Twice the slots: the native loop takes an interactive job beyond its slots when a batch job can yield
      // one (admission.ts); it parks the batch job and resumes it later. Admission never hands over more than that.
      concurrentTasksPerWorker: 2 * o.slots,
      idleTimeout: 2 ** 31 - 1,
      maxQueue: Math.max(1, o.queueLimit + o.workers * o.slots),
      atomics: 'disabled',
      workerData: { ...o.workerData, stopChannel: this.stopChannel } satisfies ModelWorkerData,
    });
    this.pool.on('message', (m: WorkerStatus) => {
      switch (m?.hearth) {
        case 'worker-stopped':
          this.workersStopped++;
          if (m.loadAborted) this.loadsAborted++;
          return;
        case 'worker-ready':
          return listener.ready(m);
        case 'worker-failed':
          return listener.loadFailed(m.reason);
        case 'prompt-cache':
        case 'kv-cache':
        case 'preemptions':
          return listener.report(m);
      }
    });
    this.pool.on('error', (err: Error) => listener.workerError(err));
  }

  /** Runs one generation task; its events come back on `task.port` (transferred). */
  runGeneration(task: GenerationTask): Promise<void> {
    return this.pool.run(task, { transferList: [task.port] });
  }

  runEmbedding(task: EmbeddingTask): Promise<EmbeddingTaskResult> {
    return (this.pool as unknown as Piscina<EmbeddingTask, EmbeddingTaskResult>).run(task, { name: 'embed' });
  }

  /**
   * Once `generationsEnded()`, sends WorkerStop (again every 100 ms: a worker still starting misses what came before
   * it listened); when every worker answered, or at `deadline`, terminates the threads.
   */
  async stop(deadline: number, generationsEnded: () => boolean, modelId: string): Promise<void> {
    await waitFor(generationsEnded, deadline);
    const channel = new BroadcastChannel(this.stopChannel);
    const startedAt = performance.now();
    const send = () => channel.postMessage({ t: 'stop' } satisfies WorkerStop);
    send();
    const resend = setInterval(send, 100);
    await waitFor(() => this.workersStopped >= this.o.workers, deadline);
    clearInterval(resend);
    channel.close();
    const outcome = {
      model: modelId,
      stopped: this.workersStopped,
      workers: this.o.workers,
      loadsAborted: this.loadsAborted,
      ms: Math.round(performance.now() - startedAt),
    };
    if (this.workersStopped < this.o.workers)
      this.log.warn('model workers did not stop in time: terminating them', outcome);
    else this.log.info('model workers stopped', outcome);
    await this.pool.destroy();
  }
}
