import { RESPONSES_FIELDS, startNamingFieldsAs } from './prompt-field-naming.ts';
import { whenReady } from '../accounts/fresh-credentials.ts';
import { type GenerationAnswer, generationRoute, type GenerationRouteDeps } from './generation-route.ts';
import { invalidRequest, responseNotFound } from '../errors/index.ts';
import { type ResponseEvent, ResponseRenderer } from '../protocol/responses-events.ts';
import { type ResponsesRequest, validateResponsesRequest } from '../protocol/responses-request.ts';
import type { ChatMessage, ToolCall } from '../protocol/chat-request.ts';
import { type AnswerFormat } from './chat-responder.ts';
import type { InferenceCaller } from './prompt-cache-scope.ts';
import type { ResponseRepository } from './response-repository.ts';
import type { HttpExchange } from '../http/http-exchange.ts';
import { type CursorPage, cursorPage, pageLimit, pageOrder } from '../http/list-view.ts';
import type { Route } from '../http/router.ts';
import { readerKey } from './key-admission.ts';

export interface ResponsesRouteDeps extends GenerationRouteDeps {
  /** Where `store`d responses live (and `previous_response_id` finds them). */
  responses: ResponseRepository;
}

/** One named SSE event, as OpenAI frames Responses API streams (`event:` line + `data:` line; no [DONE]). */
const sseEvent = (e: ResponseEvent) => `event: ${e.type}\ndata: ${JSON.stringify(e)}\n\n`;
const JSON_HEADERS = [['content-type', 'application/json']] as const;
type Json = Record<string, unknown>;

/**
 * The OpenAI Responses API over the shared model.
 * `POST /api/inference/v1/responses`: the request becomes a chat request for the gateway — after the stored
 * conversation of `previous_response_id` when one is named (the caller's account's, else 404
 * previous_response_not_found) — and its ChatDeltas are rendered by ResponseRenderer as one Response object or
 * as the event stream, by the one responder (chat-responder.ts); a failure after commit is one `event: error`.
 * With `store` (the default) the finished response is written before its last bytes go out (on PostgreSQL:
 * committed, so the next request finds it on any replica; a commit that fails ends the answer with 503
 * store_unavailable, or its stream with that error event).
 * `GET` / `DELETE /responses/{id}` and `GET /responses/{id}/input_items`: the caller's account's stored
 * responses only; another account's id is answered as an unknown one (404 response_not_found).
 */
export function responsesRoutes(d: ResponsesRouteDeps): Route[] {
  /** The caller's stored response of the route's id, or 404 (synchronous when the key and the response are known here). */
  const stored = (ex: HttpExchange) => {
    const id = ex.params[0]!;
    return whenReady(readerKey(ex, d.keys, d.limiter), (caller) =>
      whenReady(d.responses.getCurrent(caller.accountId, id), (r) => {
        if (r === undefined) throw responseNotFound(id);
        return r;
      }),
    );
  };
  return [
    generationRoute(d, { pattern: '/api/inference/v1/responses', name: 'responses' }, responsesPlan(d)),
    {
      method: 'GET',
      pattern: '/api/inference/v1/responses/:id',
      name: 'response',
      handler: (ex) => whenReady(stored(ex), (r) => ex.send(200, JSON.stringify(r.response), JSON_HEADERS)),
    },
    {
      method: 'DELETE',
      pattern: '/api/inference/v1/responses/:id',
      name: 'response',
      handler: (ex) =>
        whenReady(readerKey(ex, d.keys, d.limiter), (caller) => {
          const id = ex.params[0]!;
          return whenReady(d.responses.delete(caller.accountId, id), (deleted) => {
            if (!deleted) throw responseNotFound(id);
            ex.send(200, JSON.stringify({ id, object: 'response', deleted: true }), JSON_HEADERS);
          });
        }),
    },
    {
      method: 'GET',
      pattern: '/api/inference/v1/responses/:id/input_items',
      name: 'response_input_items',
      handler: (ex) =>
        whenReady(stored(ex), (r) =>
          ex.send(200, JSON.stringify(inputItemsPage(r.inputItems, new URLSearchParams(ex.query))), JSON_HEADERS),
        ),
    },
  ];
}

/** How a Responses API body is answered (the route's and a batch line's one plan): stored when `store` asks. */
export function responsesPlan(
  d: Pick<ResponsesRouteDeps, 'gateway' | 'responses'>,
): (json: unknown, caller: InferenceCaller) => GenerationAnswer | Promise<GenerationAnswer> {
  return (json, caller) => {
    const request = validateResponsesRequest(json);
    return whenReady(previousHistory(d.responses, request, caller), (history) => {
      const chat = {
        ...request.chat,
        messages: [...request.instructionMessages, ...history, ...request.inputMessages],
      };
      const renderer = new ResponseRenderer(chat.model, request.echo, request.includeLogprobs);
      const keep = (response: Json) => {
        if (!request.store) return undefined;
        return d.responses.put({
          id: renderer.id,
          accountId: caller.accountId,
          response,
          inputItems: request.inputItems,
          history: [...history, ...request.inputMessages, assistantTurn(response)],
        });
      };
      return {
        model: chat.model,
        stream: chat.stream,
        format: responsesFormat(renderer, keep),
        start: startNamingFieldsAs(RESPONSES_FIELDS, (sink, c, model) => d.gateway.startChat(model, chat, sink, c)),
      };
    });
  };
}

/** The stored conversation a continuation starts from ([] without `previous_response_id`). */
function previousHistory(
  responses: ResponseRepository,
  request: ResponsesRequest,
  caller: InferenceCaller,
): ChatMessage[] | Promise<ChatMessage[]> {
  const previousId = request.previousResponseId;
  if (previousId === null) return [];
  return whenReady(responses.getCurrent(caller.accountId, previousId), (previous) => {
    if (previous === undefined) throw responseNotFound(previousId, 'previous_response_id');
    return previous.history;
  });
}

/** A finished Response's output as the assistant's chat turn: its text, and its function calls. */
function assistantTurn(response: Json): ChatMessage {
  let content = '';
  const toolCalls: ToolCall[] = [];
  for (const item of (response.output as Json[]) ?? []) {
    if (item.type === 'message')
      for (const part of (item.content as Json[]) ?? []) content += typeof part.text === 'string' ? part.text : '';
    if (item.type === 'function_call')
      toolCalls.push({ id: String(item.call_id), name: String(item.name), arguments: String(item.arguments) });
  }
  return toolCalls.length > 0 ? { role: 'assistant', content, toolCalls } : { role: 'assistant', content };
}

const MAX_PAGE = 100;

/** One page of input items, as OpenAI lists them: `limit` 1-100 (20), `order` desc (default) or asc, `after` an item id. */
function inputItemsPage(items: Json[], q: URLSearchParams): CursorPage<Json> {
  const limit = pageLimit(q, MAX_PAGE);
  const ordered = pageOrder(q) === 'asc' ? items : [...items].reverse();
  const after = q.get('after');
  let from = 0;
  if (after !== null) {
    const at = ordered.findIndex((item) => item.id === after);
    if (at < 0) throw invalidRequest(`'after' names no input item of this response`, 'after', 'invalid_value');
    from = at + 1;
  }
  return cursorPage(ordered.slice(from, from + limit), from + limit < ordered.length);
}

/**
 * The Responses API's answer format: one Response object, or named events (no [DONE]); `keep` stores the finished
 * response first, and the answer ends once what it returns (the store's commit, where other replicas read it) settled.
 */
function responsesFormat(
  renderer: ResponseRenderer,
  keep: (response: Json) => Promise<void> | undefined,
): AnswerFormat {
  let kept: Promise<void> | undefined;
  return {
    push: (d) => {
      renderer.push(d);
    },
    body: () => {
      const response = renderer.response();
      kept = keep(response);
      return response;
    },
    settled: () => kept,
    // response.created / in_progress come first whenever the stream commits (they show an empty output).
    streamHead: () => renderer.start().map(sseEvent).join(''),
    streamEvent: (d) => {
      const events = renderer.push(d);
      if (d.type === 'finish') kept = keep(renderer.response());
      return events.map(sseEvent).join('');
    },
    streamError: (e) => `event: error\ndata: ${JSON.stringify({ type: 'error', ...e.toBody() })}\n\n`,
  };
}
