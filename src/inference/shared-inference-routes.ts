import { whenReady } from '../accounts/fresh-credentials.ts';
import { type GenerationAnswer, generationRoute, type GenerationRouteDeps } from './generation-route.ts';
import { validateChatRequest } from '../protocol/validate-chat-request.ts';
import { chatCompletionFormat } from './chat-responder.ts';
import type { Route } from '../http/router.ts';
import { readerKey } from './key-admission.ts';
import { completionsRoutes } from './completions-routes.ts';
import { embeddingsRoutes } from './embeddings-routes.ts';
import { messagesRoutes } from './messages-routes.ts';
import { responsesRoutes, type ResponsesRouteDeps } from './responses-routes.ts';

const JSON_HEADERS = [['content-type', 'application/json']] as const;

export type SharedInferenceRouteDeps = GenerationRouteDeps & ResponsesRouteDeps;

/**
 * The shared, OpenAI-compatible endpoint: /api/inference/v1/{chat/completions,models,models/{id},responses,completions,
 * embeddings,messages,messages/count_tokens}
 * (and GET/DELETE /responses/{id}, GET /responses/{id}/input_items).
 * A model id holds a `/`: `GET /models/{id}` takes it percent-encoded (`local%2Fm`, as the SDKs send it) or
 * as two path segments (`local/m`).
 */
export function sharedInferenceRoutes(d: SharedInferenceRouteDeps): Route[] {
  const retrieveModel: Route['handler'] = (ex) =>
    whenReady(readerKey(ex, d.keys, d.limiter), () =>
      ex.send(200, d.gateway.modelBody(ex.params.join('/')), JSON_HEADERS),
    );
  return [
    generationRoute(
      d,
      { pattern: '/api/inference/v1/chat/completions', name: 'chat_completions' },
      chatCompletionsPlan(d),
    ),
    {
      method: 'GET',
      pattern: '/api/inference/v1/models',
      name: 'models',
      handler: (ex) =>
        whenReady(readerKey(ex, d.keys, d.limiter), () => ex.send(200, d.gateway.modelsBody(), JSON_HEADERS)),
    },
    { method: 'GET', pattern: '/api/inference/v1/models/:id', name: 'model', handler: retrieveModel },
    { method: 'GET', pattern: '/api/inference/v1/models/:namespace/:name', name: 'model', handler: retrieveModel },
    ...responsesRoutes(d),
    ...completionsRoutes(d),
    ...embeddingsRoutes(d),
    ...messagesRoutes(d),
  ];
}

/** How a chat completions body is answered (the route's and a batch line's one plan). */
export function chatCompletionsPlan(d: Pick<GenerationRouteDeps, 'gateway'>): (json: unknown) => GenerationAnswer {
  return (json) => {
    const request = validateChatRequest(json);
    return {
      model: request.model,
      stream: request.stream,
      format: chatCompletionFormat(request.model, request.includeUsage),
      start: (sink, caller, model) => d.gateway.startChat(model, request, sink, caller),
    };
  };
}
