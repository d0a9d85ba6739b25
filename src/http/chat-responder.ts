import type { GenerationHandle, GenerationResult, GenerationSink } from '../engine/generation.ts';
import { type ApiError, toApiError } from '../errors/index.ts';
import { CompletionBuilder, makeUsage } from '../protocol/completion-builder.ts';
import { SSE_DONE, sseData } from '../protocol/sse.ts';
import type { HttpExchange } from './http-exchange.ts';
import { SseWriter } from './sse-writer.ts';

export interface ChatResponderOptions {
  stream: boolean;
  includeUsage: boolean;
  model: string;
  keepAliveMs: number;
  streamBufferLimit: number;
  /** Whether to report usage.prompt_tokens_details.cached_tokens. */
  reportCachedTokens: boolean;
}

/**
 * Answers one chat completion from a generation's events, as a JSON body or an SSE stream.
 * Commit late (habit 5): status and SSE headers go out with the first text, so an early failure is a
 * normal JSON error with its real status. If no text comes within keepAliveMs (a long prompt), the stream
 * is committed with a `: keep-alive` comment and repeats it; a failure after commit is one
 * `data: {"error":...}` event and no [DONE]. A client that disconnects, or a stream that overflows its
 * buffer, cancels the generation. `done` resolves when the exchange is finished either way.
 */
export function respondToChat(ex: HttpExchange, o: ChatResponderOptions, start: (sink: GenerationSink) => GenerationHandle): Promise<void> {
  const builder = new CompletionBuilder(o.model);
  let handle: GenerationHandle | null = null;
  let finished = false;
  let resolveDone: () => void = () => {};
  const done = new Promise<void>((r) => { resolveDone = r; });
  const finish = () => {
    if (finished) return;
    finished = true;
    writer?.dispose();
    clearTimeout(commitTimer);
    resolveDone();
  };
  const cancel = () => {
    handle?.cancel();
    finish();
  };
  ex.onAbort(cancel);

  const usageOf = (r: GenerationResult) => makeUsage(r.promptTokens, r.completionTokens, o.reportCachedTokens ? r.cachedTokens : undefined);

  let writer: SseWriter | null = null;
  let commitTimer: NodeJS.Timeout | undefined;
  let sink: GenerationSink;

  if (!o.stream) {
    let text = '';
    sink = {
      onText: (t) => { text += t; },
      onDone: (r) => { ex.sendJson(200, builder.completion(text, r.finishReason, usageOf(r))); finish(); },
      onError: (e) => { ex.sendError(e); finish(); },
    };
  } else {
    const sse = new SseWriter(ex, () => { ex.close(); cancel(); }, { bufferLimit: o.streamBufferLimit, keepAliveMs: o.keepAliveMs });
    writer = sse;
    let committed = false;
    const commit = (first: string) => {
      committed = true;
      clearTimeout(commitTimer);
      sse.write(sseData(builder.roleChunk()) + first);
      sse.startKeepAlive();
    };
    commitTimer = setTimeout(() => { if (!committed && !finished) commit(': keep-alive\n\n'); }, o.keepAliveMs);
    commitTimer.unref();
    sink = {
      onText: (t) => {
        const event = builder.contentEvent(t);
        if (committed) sse.write(event);
        else commit(event);
      },
      onDone: (r) => {
        let tail = sseData(builder.finishChunk(r.finishReason));
        if (o.includeUsage) tail += sseData(builder.usageChunk(usageOf(r)));
        if (!committed) commit('');
        sse.end(tail + SSE_DONE);
        finish();
      },
      onError: (e: ApiError) => {
        if (!committed) ex.sendError(e);
        else sse.end(sseData(e.toBody()));
        finish();
      },
    };
  }

  try {
    handle = start(sink);
    if (ex.aborted) handle.cancel();
  } catch (err) {
    ex.sendError(toApiError(err));
    finish();
  }
  return done;
}
