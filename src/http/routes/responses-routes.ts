import type { GenerationHandle } from '../../engine/generation.ts';
import type { KeyAuthenticator } from '../../gateway/authenticator.ts';
import type { KeyLimiter } from '../../gateway/key-limiter.ts';
import type { SharedModelGateway } from '../../gateway/shared-model-gateway.ts';
import { type ApiError, toApiError } from '../../errors/index.ts';
import type { ChatDeltaSink } from '../../protocol/chat-delta.ts';
import { type ResponseEvent, ResponseRenderer } from '../../protocol/responses-events.ts';
import { validateResponsesRequest } from '../../protocol/responses-request.ts';
import type { HttpExchange } from '../http-exchange.ts';
import type { Route } from '../router.ts';
import { SseWriter } from '../sse-writer.ts';
import { withKeyAdmission } from './key-admission.ts';

export interface ResponsesRouteDeps {
  gateway: SharedModelGateway;
  keys: KeyAuthenticator;
  limiter: KeyLimiter;
  bodyLimit: number;
  keepAliveMs: number;
  streamBufferLimit: number;
}

/** One named SSE event, as OpenAI frames Responses API streams (`event:` line + `data:` line; no [DONE]). */
const sseEvent = (e: ResponseEvent) => `event: ${e.type}\ndata: ${JSON.stringify(e)}\n\n`;

/**
 * `POST /api/inference/v1/responses`: the OpenAI Responses API over the shared model, stateless. The request
 * becomes a chat request for the gateway; its ChatDeltas are rendered by ResponseRenderer as one Response
 * object or as the event stream. Streams commit late (habit 5) like chat completions: status and headers go
 * out with the first delta or, during a long prompt, with a `: keep-alive` comment; a failure after that is
 * one `event: error` and the end of the stream. A client that goes away cancels the generation.
 */
export function responsesRoutes(d: ResponsesRouteDeps): Route[] {
  return [
    {
      method: 'POST',
      pattern: '/api/inference/v1/responses',
      name: 'responses',
      body: { kind: 'json', limit: d.bodyLimit },
      handler: (ex) => {
        return withKeyAdmission(ex, d.keys, d.limiter, async (json, meter) => {
          const request = validateResponsesRequest(json);
          const renderer = new ResponseRenderer(d.gateway.modelId, request.echo, request.includeLogprobs);
          await answer(ex, d, request.chat.stream, renderer, (sink) => d.gateway.startChat(request.chat, meter(sink)));
        });
      },
    },
  ];
}

function answer(ex: HttpExchange, d: ResponsesRouteDeps, stream: boolean, renderer: ResponseRenderer, start: (sink: ChatDeltaSink) => GenerationHandle): Promise<void> {
  let handle: GenerationHandle | null = null;
  let finished = false;
  let resolveDone: () => void = () => {};
  const done = new Promise<void>((r) => { resolveDone = r; });
  let writer: SseWriter | null = null;
  let commitTimer: NodeJS.Timeout | undefined;
  const finish = () => {
    if (finished) return;
    finished = true;
    writer?.dispose();
    clearTimeout(commitTimer);
    resolveDone();
  };
  ex.onAbort(() => {
    const wasFinished = finished;
    finish();
    if (!wasFinished) handle?.cancel();
  });

  let sink: ChatDeltaSink;
  if (!stream) {
    sink = {
      push: (delta) => {
        if (finished) return;
        renderer.push(delta);
        if (delta.type !== 'finish') return;
        ex.sendJson(200, renderer.response());
        finish();
      },
      fail: (e) => {
        if (finished) return;
        ex.sendError(e);
        finish();
      },
    };
  } else {
    const sse = new SseWriter(ex, () => { ex.close(); handle?.cancel(); finish(); }, { bufferLimit: d.streamBufferLimit, keepAliveMs: d.keepAliveMs });
    writer = sse;
    let committed = false;
    // response.created / in_progress come first whenever the stream commits (they show an empty output).
    const head = renderer.start().map(sseEvent).join('');
    const commit = (first: string) => {
      committed = true;
      clearTimeout(commitTimer);
      sse.write(head + first);
      sse.startKeepAlive();
    };
    commitTimer = setTimeout(() => { if (!committed && !finished) commit(': keep-alive\n\n'); }, d.keepAliveMs);
    commitTimer.unref();
    sink = {
      push: (delta) => {
        if (finished) return;
        const events = renderer.push(delta).map(sseEvent).join('');
        if (delta.type !== 'finish') {
          if (committed) sse.write(events);
          else commit(events);
          return;
        }
        if (!committed) commit('');
        sse.end(events);
        finish();
      },
      fail: (e: ApiError) => {
        if (finished) return;
        if (!committed) ex.sendError(e);
        else sse.end(`event: error\ndata: ${JSON.stringify({ type: 'error', ...e.toBody() })}\n\n`);
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
