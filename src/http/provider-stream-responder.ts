import { toApiError } from '../errors/index.ts';
import type { ChatCompletion, ChatCompletionChunk } from '../protocol/openai-types.ts';
import { SSE_DONE, SSE_KEEP_ALIVE, sseData } from '../protocol/sse.ts';
import type { HttpExchange } from './http-exchange.ts';
import { SseWriter } from './sse-writer.ts';

export interface ProviderResponderOptions {
  stream: boolean;
  /** Silence before the stream is committed with a `: keep-alive` comment, and the comment interval after. */
  keepAliveMs: number;
  /** Bytes held for a client that does not read before the call is cancelled and the connection dropped. */
  streamBufferLimit: number;
}

/** A reply that arrives from an upstream call: already in chat-completions objects and chunks. */
export interface UpstreamReply {
  complete(signal: AbortSignal): Promise<ChatCompletion>;
  stream(signal: AbortSignal): AsyncIterable<ChatCompletionChunk>;
}

/**
 * Answers one chat completion from an upstream call, as a JSON body or an SSE stream. The upstream call
 * gets an AbortSignal that aborts when the client disconnects (or a stream overflows its buffer), so the
 * upstream request is cancelled at once. Commit late (architecture habit 5): status and SSE headers go
 * out with the first chunk, so a failure before it is a JSON error with its real status; if the upstream
 * stays silent for keepAliveMs the stream is committed with a `: keep-alive` comment instead. A failure
 * after commit is one `data: {"error":...}` event and no [DONE]. Resolves when the exchange is finished.
 */
export async function respondFromUpstream(ex: HttpExchange, o: ProviderResponderOptions, reply: UpstreamReply): Promise<void> {
  const controller = new AbortController();
  ex.onAbort(() => controller.abort());
  if (!o.stream) {
    try {
      const completion = await reply.complete(controller.signal);
      ex.sendJson(200, completion);
    } catch (err) {
      if (!ex.closed) ex.sendError(toApiError(err));
    }
    return;
  }

  const sse = new SseWriter(ex, () => { ex.close(); controller.abort(); }, { bufferLimit: o.streamBufferLimit, keepAliveMs: o.keepAliveMs });
  let committed = false;
  const commit = (first: string) => {
    committed = true;
    clearTimeout(commitTimer);
    sse.write(first);
    sse.startKeepAlive();
  };
  const commitTimer = setTimeout(() => { if (!committed && !ex.closed) commit(SSE_KEEP_ALIVE); }, o.keepAliveMs);
  commitTimer.unref();
  try {
    for await (const chunk of reply.stream(controller.signal)) {
      if (ex.closed) break; // stops the upstream body (the provider cancels it in its finally)
      if (committed) sse.write(sseData(chunk));
      else commit(sseData(chunk));
    }
    if (ex.closed) return;
    if (!committed) commit('');
    sse.end(SSE_DONE);
  } catch (err) {
    if (ex.closed || controller.signal.aborted) return; // the client is gone: nothing to tell
    const apiError = toApiError(err);
    if (!committed) ex.sendError(apiError);
    else sse.end(sseData(apiError.toBody()));
  } finally {
    clearTimeout(commitTimer);
    sse.dispose();
  }
}
