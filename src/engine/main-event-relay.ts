import { engineFailure } from '../errors/engine-failure.ts';
import type { NativeFailureCode, TokenLogprob } from '../../native/generation-job.ts';
import type { JobRelay, SlotFinishReason, WorkerEvent } from './worker-protocol.ts';

/** A relayed job's event as the addon delivers it (native/binding.ts NativeLoopEvent; `job` is the task's tag). */
export type RelayedJobEvent =
  | { type: 'prompt'; job: number; promptTokens: number; cachedTokens: number }
  | { type: 'text'; job: number; text: string; tokens: number; logprobs?: TokenLogprob[] }
  | {
      type: 'done';
      job: number;
      finishReason: SlotFinishReason;
      promptTokens: number;
      cachedTokens: number;
      completionTokens: number;
      stop?: string;
    }
  | { type: 'error'; job: number; code: NativeFailureCode; message: string };

/** The addon's EventRelay (native/binding.ts): a process-wide id, and close(). */
export interface RelayChannel {
  readonly id: number;
  close(): void;
}

/**
 * Opens the addon's EventRelay on this thread, or returns null where the addon cannot load. Injected by
 * main.ts (native/binding.ts openEventRelay): engine/ starts workers by URL and never imports native/.
 */
export type RelayOpener = (onEvents: (events: RelayedJobEvent[]) => void) => RelayChannel | null;

/**
 * The main thread's end of the native event relay (native/src/event_relay.h): model workers' native
 * loops send relayed jobs' events here straight from their loop threads, so a token wakes one
 * JavaScript thread (this one) instead of the worker's and then this one. Each task registers a
 * handler under a tag; events arrive as the WorkerEvents the task's port would carry, in order per task.
 * Main thread only; `close()` is idempotent (later events are dropped; the workers' jobs still end).
 */
export class MainEventRelay {
  private readonly handlers = new Map<number, (e: WorkerEvent) => void>();
  private lastTag = 0;

  private constructor(
    private readonly relay: RelayChannel,
    private readonly onHandlerError: (err: unknown) => void,
  ) {}

  /** A relay, or null where the native addon cannot load here (the tasks then use their ports only). */
  static open(opener: RelayOpener, onHandlerError: (err: unknown) => void): MainEventRelay | null {
    let self: MainEventRelay | null = null;
    const relay = opener((events) => self?.deliver(events));
    if (!relay) return null;
    self = new MainEventRelay(relay, onHandlerError);
    return self;
  }

  /** Registers a task's handler; the JobRelay goes into its GenerationTask. */
  route(handler: (e: WorkerEvent) => void): JobRelay {
    do {
      this.lastTag = this.lastTag >= 0xffffffff ? 1 : this.lastTag + 1;
    } while (this.handlers.has(this.lastTag));
    this.handlers.set(this.lastTag, handler);
    return { id: this.relay.id, tag: this.lastTag };
  }

  /** The task ended: its later events, if any, are dropped. */
  unroute(route: JobRelay): void {
    this.handlers.delete(route.tag);
  }

  close(): void {
    this.handlers.clear();
    this.relay.close();
  }

  private deliver(events: RelayedJobEvent[]): void {
    for (const e of events) {
      const handler = this.handlers.get(e.job);
      if (!handler) continue;
      try {
        handler(workerEventOf(e));
      } catch (err) {
        this.onHandlerError(err); // one task's failure never stops the other tasks' events
      }
    }
  }
}

function workerEventOf(e: RelayedJobEvent): WorkerEvent {
  switch (e.type) {
    case 'prompt':
      return { t: 'prompt', promptTokens: e.promptTokens, cachedTokens: e.cachedTokens };
    case 'text':
      return e.logprobs
        ? { t: 'text', text: e.text, n: e.tokens, logprobs: e.logprobs }
        : { t: 'text', text: e.text, n: e.tokens };
    case 'done':
      return {
        t: 'done',
        finishReason: e.finishReason,
        promptTokens: e.promptTokens,
        cachedTokens: e.cachedTokens,
        completionTokens: e.completionTokens,
        ...(e.stop !== undefined ? { stop: e.stop } : {}),
      };
    case 'error':
      return { t: 'error', failure: engineFailure.internal(e.code, e.message) };
  }
}
