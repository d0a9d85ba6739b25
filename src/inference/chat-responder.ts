import { ApiError, toApiError } from '../errors/index.ts';
import { ChatAnswer } from '../protocol/chat-answer.ts';
import type { ChatDelta, ChatDeltaSink } from '../protocol/chat-delta.ts';
import { CompletionBuilder } from '../protocol/completion-builder.ts';
import { SSE_KEEP_ALIVE, sseData } from '../protocol/sse.ts';
import type { HttpExchange } from '../http/http-exchange.ts';
import { SseWriter } from '../http/sse-writer.ts';

export interface ChatResponderOptions {
  stream: boolean;
  includeUsage: boolean;
  /** The `model` of every object sent. */
  model: string;
  /** Silence before the stream is committed with a `: keep-alive` comment, and the comment interval after. */
  keepAliveMs: number;
  /** Bytes held for a client that does not read before the producer is cancelled and the connection dropped. */
  streamBufferLimit: number;
}

/** What a started producer gives back: cancel() stops it at once (idempotent). */
export interface DeltaProducer {
  cancel(): void;
}

/**
 * How one answer is written, the only thing that differs between the chat-completions and the Responses API:
 * a JSON body built from every delta, or SSE text (a head sent when the stream commits, one piece per delta,
 * the failure event). One per answer; not shared.
 */
export interface AnswerFormat {
  /** JSON mode: takes every delta in order; `body()` is called once, after the finish delta. */
  push(delta: ChatDelta): void;
  body(): unknown;
  /** SSE text that opens a committed stream; called once, before any streamEvent (streaming answers only). */
  streamHead(): string;
  /** SSE text for one delta; for the finish delta, everything that ends the stream. */
  streamEvent(delta: ChatDelta): string;
  /** SSE text of a failure after the stream was committed (the stream ends after it). */
  streamError(error: ApiError): string;
  /**
   * Called after `body()` or the finish delta's `streamEvent`: a promise when the answer must not end before
   * something the format started there settles (a stored response committed where every replica reads it); the
   * end goes out once it resolves, or its rejection is answered instead (the JSON error, or the error event).
   * Undefined, or no such method: the answer ends at once.
   */
  settled?(): Promise<void> | undefined;
}

/** The chat-completions format: CompletionBuilder chunks, `data: [DONE]`, OpenAI's error event. */
export function chatCompletionFormat(model: string, includeUsage: boolean): AnswerFormat {
  const builder = new CompletionBuilder(model);
  const answer = new ChatAnswer();
  return {
    push: (d) => answer.push(d),
    body: () => answer.completion(builder),
    streamHead: () => sseData(builder.roleChunk()),
    streamEvent: (d) => builder.deltaEvent(d, includeUsage),
    streamError: (e) => sseData(e.toBody()),
  };
}

export interface AnswerOptions {
  stream: boolean;
  keepAliveMs: number;
  streamBufferLimit: number;
}

/** respondWith in the chat-completions format. */
export function respondToChat(
  ex: HttpExchange,
  o: ChatResponderOptions,
  start: (sink: ChatDeltaSink) => DeltaProducer,
): Promise<void> {
  return respondWith(ex, o, chatCompletionFormat(o.model, o.includeUsage), start);
}

/**
 * THE responder: answers one request from a stream of ChatDeltas, whoever produces them (the shared model's
 * engine pushes them from its sink callbacks; an upstream provider's async iterable is pumped in by
 * respondFromDeltas), as a JSON body or an SSE stream written by `format`.
 *
 * Commit late (architecture habit 5): status and SSE headers go out with the first delta, so a failure
 * before it is a normal JSON error with its real status. If nothing comes within keepAliveMs (a long prompt,
 * a slow upstream), the stream is committed with a `: keep-alive` comment and repeats it; a failure after
 * commit is the format's error event and the end of the stream. A client that disconnects, or a stream that
 * overflows its buffer, cancels the producer. Deltas pushed after the end are ignored. The returned promise
 * resolves when the exchange is finished either way. Main thread.
 */
export function respondWith(
  ex: HttpExchange,
  o: AnswerOptions,
  format: AnswerFormat,
  start: (sink: ChatDeltaSink) => DeltaProducer,
): Promise<void> {
  let producer: DeltaProducer | null = null;
  let finished = false;
  let resolveDone: () => void = () => {};
  const done = new Promise<void>((r) => {
    resolveDone = r;
  });
  let writer: SseWriter | null = null;
  let commitTimer: NodeJS.Timeout | undefined;
  /** Ends the exchange for the responder; `written` (the stream's end reaching uWS) settles `done`. */
  const finish = (written?: Promise<void>) => {
    if (finished) return;
    finished = true;
    writer?.dispose();
    clearTimeout(commitTimer);
    if (written) void written.then(resolveDone);
    else resolveDone();
  };
  const cancel = () => {
    const wasFinished = finished;
    finish();
    if (!wasFinished) producer?.cancel();
  };
  ex.onAbort(cancel);

  /** Set once the finish delta came: later deltas and failures are ignored while the end waits for `format.settled()`. */
  let ending = false;
  /** `end()` now, or once `format.settled()` resolves (its rejection: `failEnd`), unless the client left meanwhile. */
  const endWhenSettled = (end: () => void, failEnd: (e: ApiError) => void) => {
    ending = true;
    const settled = format.settled?.();
    if (settled === undefined) return end();
    settled.then(
      () => {
        if (!finished) end();
      },
      (err: unknown) => {
        if (!finished) failEnd(toApiError(err));
      },
    );
  };

  let sink: ChatDeltaSink;
  if (!o.stream) {
    sink = {
      push: (d) => {
        if (finished || ending) return;
        format.push(d);
        if (d.type !== 'finish') return;
        const body = format.body();
        endWhenSettled(
          () => {
            ex.sendJson(200, body);
            finish();
          },
          (e) => {
            ex.sendError(e);
            finish();
          },
        );
      },
      fail: (e) => {
        if (finished || ending) return;
        ex.sendError(e);
        finish();
        producer?.cancel(); // a failure from outside the producer (its key revoked) stops it too; idempotent otherwise
      },
    };
  } else {
    const sse = new SseWriter(
      ex,
      () => {
        ex.close();
        cancel();
      },
      { bufferLimit: o.streamBufferLimit, keepAliveMs: o.keepAliveMs },
    );
    writer = sse;
    let committed = false;
    const head = format.streamHead();
    const commit = (first: string) => {
      committed = true;
      clearTimeout(commitTimer);
      sse.write(head + first);
      sse.startKeepAlive();
    };
    commitTimer = setTimeout(() => {
      if (!committed && !finished) commit(SSE_KEEP_ALIVE);
    }, o.keepAliveMs);
    commitTimer.unref();
    sink = {
      push: (d: ChatDelta) => {
        if (finished || ending) return;
        const event = format.streamEvent(d);
        if (d.type === 'finish') {
          if (!committed) commit('');
          endWhenSettled(
            () => {
              sse.end(event);
              finish(sse.ended);
            },
            (e) => {
              sse.end(format.streamError(e));
              finish(sse.ended);
            },
          );
        } else if (committed) sse.write(event);
        else commit(event);
      },
      fail: (e: ApiError) => {
        if (finished || ending) return;
        if (!committed) {
          ex.sendError(e);
          finish();
        } else {
          sse.end(format.streamError(e));
          finish(sse.ended);
        }
        producer?.cancel(); // a failure from outside the producer (its key revoked) stops it too; idempotent otherwise
      },
    };
  }

  try {
    producer = start(sink);
    if (ex.aborted || finished) producer.cancel();
  } catch (err) {
    sink.fail(toApiError(err));
  }
  return done;
}

/**
 * respondToChat for a pull-based producer (an upstream provider): `open` gets an AbortSignal that aborts when
 * the client goes away or the stream overflows, and its deltas are pushed as they arrive. An iterable that
 * ends without a finish delta is a 502 `stream_interrupted`; a throw is mapped by toApiError.
 */
export function respondFromDeltas(
  ex: HttpExchange,
  o: ChatResponderOptions,
  open: (signal: AbortSignal) => AsyncIterable<ChatDelta>,
): Promise<void> {
  return respondToChat(ex, o, (sink) => {
    const controller = new AbortController();
    void (async () => {
      try {
        for await (const delta of open(controller.signal)) {
          if (controller.signal.aborted) return; // stops the iterable (the provider cancels its upstream body)
          sink.push(delta);
          if (delta.type === 'finish') return;
        }
        if (!controller.signal.aborted)
          sink.fail(
            new ApiError({
              status: 502,
              type: 'upstream_error',
              message: 'The answer ended before it was complete',
              param: null,
              code: 'stream_interrupted',
            }),
          );
      } catch (err) {
        if (!controller.signal.aborted) sink.fail(toApiError(err));
      }
    })();
    return { cancel: () => controller.abort() };
  });
}
