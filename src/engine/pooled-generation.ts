import { MessageChannel } from 'node:worker_threads';
import { engineFailure } from '../errors/engine-failure.ts';
import { queueFull, shuttingDown } from '../errors/errors.ts';
import { toApiError } from '../errors/to-api-error.ts';
import type { Metrics } from '../metrics/metrics.ts';
import type { Admission } from './admission.ts';
import { DEFAULT_SCHEDULE, type GenerationHandle, type GenerationRequest, type GenerationSink } from './generation.ts';
import { GenerationMeter } from './generation-meter.ts';
import type { MainEventRelay } from './main-event-relay.ts';
import type { ModelWorkerPool } from './model-worker-pool.ts';
import { resolveGenerationJob } from './resolve-generation-job.ts';
import type { GenerationTask, MainEvent, WorkerEvent } from './worker-protocol.ts';

/** A generation the gateway did not place (tests, internal callers): interactive, the anonymous tenant. */

/** What a generation needs of its engine (LocalEngine), read live: the engine may stop while it runs. */
export interface GenerationHost {
  readonly admission: Admission;
  readonly pool: ModelWorkerPool;
  /** Native engine: where the loop threads send relayed tasks' events (null: the task's port only). */
  relay(): MainEventRelay | null;
  /** One per generation in flight: asks its worker to stop it (its sink then ends with shutting_down). */
  readonly cuts: Set<() => void>;
  readonly metrics: Metrics;
  readonly labels: { model: string };
  /** Server cap on completion tokens, and the default. */
  readonly maxTokens: number;
  /** The engine was disposed (its workers terminated). */
  disposed(): boolean;
  /** Disposed or draining: an engine-side end of a generation is a shutting_down, not a failure. */
  stopping(): boolean;
}

/**
 * One generation on the worker pool, from admission to its sink's end, on the main thread: queued (admission.ts),
 * handed to a worker as a task with a port, its events (the port's, and the native loop's through the event relay)
 * relayed to `sink` in order and metered (generation-meter.ts). The handle cancels it: at once while it waits,
 * through the worker once it runs. Throws queue_full when no place is left.
 */
export function startPooledGeneration(
  host: GenerationHost,
  request: GenerationRequest,
  sink: GenerationSink,
): GenerationHandle {
  const schedule = request.schedule ?? DEFAULT_SCHEDULE;
  const pool = host.pool;
  let cancelled = false;
  const meter = new GenerationMeter(host.metrics, host.labels, schedule.priority, request.countOnly === true);
  const leave = () => {
    port1.close();
    if (relayed) host.relay()?.unroute(relayed);
    host.cuts.delete(cut);
    place.leave();
  };
  // Not the request's cancel: the engine stops it, and its 'done' (cancelled) ends the sink with shutting_down.
  // One no worker has seen yet leaves the scheduler's queue and ends so at once.
  const cut = () => {
    if (cancelled || place.phase === 'ended') return;
    if (place.handedOver) return port1.postMessage({ t: 'cancel' } satisfies MainEvent);
    leave();
    sink.onError(shuttingDown());
  };

  // One handler for the port's events and the relay's (a relayed event may overtake the port's 'start').
  const onEvent = (e: WorkerEvent) => {
    if (place.phase === 'ended') return;
    if (place.phase === 'waiting') {
      place.start();
      meter.started();
    }
    switch (e.t) {
      case 'start':
        return;
      case 'prompt':
        meter.prompt(e.promptTokens, e.cachedTokens);
        place.charge(e.promptTokens);
        if (!cancelled) place.onSlot(() => port1.postMessage({ t: 'yield' } satisfies MainEvent));
        return;
      case 'text':
        place.charge(e.n);
        meter.text(e.n);
        if (!cancelled) {
          if (e.logprobs) sink.onText(e.text, e.logprobs);
          else sink.onText(e.text);
        }
        return;
      case 'done': {
        leave();
        const finishReason = cancelled ? 'cancelled' : e.finishReason;
        meter.done(e.completionTokens, finishReason);
        if (cancelled) return;
        if (finishReason === 'cancelled') {
          // Cancelled by the engine, not by this request: its loop stopped under it (workers torn down at shutdown).
          sink.onError(
            host.stopping()
              ? shuttingDown()
              : toApiError(engineFailure.internal('engine_stopped', 'the engine stopped the generation')),
          );
          return;
        }
        sink.onDone({
          finishReason,
          promptTokens: e.promptTokens,
          cachedTokens: e.cachedTokens,
          completionTokens: e.completionTokens,
          ...(e.stop !== undefined ? { stop: e.stop } : {}),
        });
        return;
      }
      case 'error':
        leave();
        if (!cancelled) sink.onError(toApiError(e.failure));
        return;
    }
  };

  const handOver = () => {
    pool.runGeneration(task).catch((err: unknown) => {
      if (place.phase === 'ended') return;
      leave();
      // Workers terminated by dispose() (shutdown after the grace period) are no failure to log.
      const failure = host.disposed() ? shuttingDown() : toApiError(engineFailure.internal('worker_task_failed', err)); // the mapper logs it
      if (!cancelled) sink.onError(failure);
    });
  };
  // Its place taken by another tenant's request (the queue was full): refused as a full queue would have been.
  const refuse = () => {
    if (place.phase === 'ended') return;
    leave();
    if (!cancelled) sink.onError(queueFull(1));
  };
  const place = host.admission.admit(schedule, { handOver, refuse });
  const { port1, port2 } = new MessageChannel();
  host.cuts.add(cut);
  port1.on('message', onEvent);
  const relayed = host.relay()?.route(onEvent);
  const task: GenerationTask = {
    messages: request.messages,
    tools: request.tools ?? [],
    prompt: request.prompt ?? null,
    countOnly: request.countOnly === true,
    promptSuffix: request.promptSuffix ?? '',
    job: resolveGenerationJob(request, { maxTokens: host.maxTokens }),
    relay: relayed ?? null,
    port: port2,
  };
  host.admission.pump();

  return {
    cancel: () => {
      if (cancelled || place.phase === 'ended') return;
      cancelled = true;
      if (!place.handedOver) {
        // Still in the scheduler's queue: it leaves at once and ends silently (no worker ever saw it).
        leave();
        meter.cancelledWhileQueued();
        return;
      }
      port1.postMessage({ t: 'cancel' } satisfies MainEvent);
    },
  };
}
