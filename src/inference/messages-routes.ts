import { anthropicErrorBody } from '../errors/index.ts';
import { type MessageEvent, MessageRenderer } from '../protocol/messages-events.ts';
import { validateMessagesRequest } from '../protocol/messages-request.ts';
import type { AnswerFormat } from './chat-responder.ts';
import type { HttpExchange } from '../http/http-exchange.ts';
import { REQUEST_LIMITS } from '../http/request-limits.ts';
import { bearerToken, type Route } from '../http/router.ts';
import { generationRoute, type GenerationRouteDeps, withModel } from './generation-route.ts';
import { withKeyAdmission } from './key-admission.ts';

export type MessagesRouteDeps = GenerationRouteDeps;

/** One named SSE event, as Anthropic frames Messages streams (`event:` line + `data:` line; no [DONE]). */
const sseEvent = (e: MessageEvent) => `event: ${e.type}\ndata: ${JSON.stringify(e)}\n\n`;

/**
 * The Hearth key as Anthropic's clients send it: `Authorization: Bearer` (@anthropic-ai/sdk 1.x), else
 * `x-api-key` (the 0.x SDKs, LangChain, Anthropic's curl examples). Any `anthropic-version` is accepted.
 */
function anthropicKey(ex: HttpExchange): string | undefined {
  const bearer = bearerToken(ex.authorization);
  if (bearer !== undefined) return bearer;
  const key = ex.header('x-api-key').trim();
  return key === '' || key.length > REQUEST_LIMITS.maxAuthorizationLength ? undefined : key;
}

/**
 * `POST /api/inference/v1/messages` and `/messages/count_tokens`: the Anthropic Messages API over the shared
 * model. The request becomes a chat request for the gateway (startChat: the same generation plan, tools and
 * engine as chat completions); its ChatDeltas are rendered by MessageRenderer as one message or as Anthropic's
 * named events, by the one responder (chat-responder.ts); a failure after commit is one `event: error`. Every
 * error on these routes is in Anthropic's shape (anthropicErrorBody).
 */
export function messagesRoutes(d: MessagesRouteDeps): Route[] {
  return [
    generationRoute(
      d,
      { pattern: '/api/inference/v1/messages', name: 'messages', errorBody: anthropicErrorBody, token: anthropicKey },
      (json) => {
        const { chat } = validateMessagesRequest(json);
        return {
          model: chat.model,
          stream: chat.stream,
          format: messagesFormat(new MessageRenderer(chat.model)),
          start: (sink, caller, model) => d.gateway.startChat(model, chat, sink, caller),
        };
      },
    ),
    {
      method: 'POST',
      pattern: '/api/inference/v1/messages/count_tokens',
      name: 'messages_count_tokens',
      body: { kind: 'json', limit: d.bodyLimit },
      errorBody: anthropicErrorBody,
      // A request under the key's limits like any other (it takes a worker's time to tokenize).
      handler: (ex) => {
        return withKeyAdmission(
          ex,
          d.keys,
          d.limiter,
          async (json) => {
            const { chat } = validateMessagesRequest(json, true);
            ex.sendJson(200, {
              input_tokens: await withModel(d.gateway, chat.model, (model) => d.gateway.countTokens(model, chat)),
            });
          },
          anthropicKey(ex),
        );
      },
    },
  ];
}

/** The Messages API's answer format: one message object, or Anthropic's named events. */
function messagesFormat(renderer: MessageRenderer): AnswerFormat {
  return {
    push: (delta) => {
      renderer.push(delta);
    },
    body: () => renderer.message(),
    streamHead: () => renderer.start().map(sseEvent).join(''),
    streamEvent: (delta) => renderer.push(delta).map(sseEvent).join(''),
    streamError: (e) => sseEvent(anthropicErrorBody(e) as unknown as MessageEvent),
  };
}
