import { generationRoute, type GenerationRouteDeps } from './generation-route.ts';
import { type ResponseEvent, ResponseRenderer } from '../protocol/responses-events.ts';
import { validateResponsesRequest } from '../protocol/responses-request.ts';
import { type AnswerFormat } from './chat-responder.ts';
import type { Route } from '../http/router.ts';

export type ResponsesRouteDeps = GenerationRouteDeps;

/** One named SSE event, as OpenAI frames Responses API streams (`event:` line + `data:` line; no [DONE]). */
const sseEvent = (e: ResponseEvent) => `event: ${e.type}\ndata: ${JSON.stringify(e)}\n\n`;

/**
 * `POST /api/inference/v1/responses`: the OpenAI Responses API over the shared model, stateless. The request
 * becomes a chat request for the gateway; its ChatDeltas are rendered by ResponseRenderer as one Response
 * object or as the event stream, by the one responder (chat-responder.ts: commit late, keep-alive, backpressure,
 * cancel on disconnect); a failure after commit is one `event: error` and the end of the stream.
 */
export function responsesRoutes(d: ResponsesRouteDeps): Route[] {
  return [
    generationRoute(d, { pattern: '/api/inference/v1/responses', name: 'responses' }, (json) => {
      const request = validateResponsesRequest(json);
      const renderer = new ResponseRenderer(d.gateway.modelId, request.echo, request.includeLogprobs);
      return { stream: request.chat.stream, format: responsesFormat(renderer), start: (sink, caller) => d.gateway.startChat(request.chat, sink, caller) };
    }),
  ];
}

/** The Responses API's answer format: one Response object, or named events (no [DONE]). */
function responsesFormat(renderer: ResponseRenderer): AnswerFormat {
  return {
    push: (d) => { renderer.push(d); },
    body: () => renderer.response(),
    // response.created / in_progress come first whenever the stream commits (they show an empty output).
    streamHead: () => renderer.start().map(sseEvent).join(''),
    streamEvent: (d) => renderer.push(d).map(sseEvent).join(''),
    streamError: (e) => `event: error\ndata: ${JSON.stringify({ type: 'error', ...e.toBody() })}\n\n`,
  };
}
