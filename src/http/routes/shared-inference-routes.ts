import type { KeyAuthenticator } from '../../gateway/authenticator.ts';
import type { KeyLimiter } from '../../gateway/key-limiter.ts';
import type { SharedModelGateway } from '../../gateway/shared-model-gateway.ts';
import { validateChatRequest } from '../../protocol/validate-chat-request.ts';
import { respondToChat } from '../chat-responder.ts';
import { bearerToken, type Route } from '../router.ts';
import { withKeyAdmission } from './key-admission.ts';
import { completionsRoutes } from './completions-routes.ts';
import { messagesRoutes } from './messages-routes.ts';
import { responsesRoutes } from './responses-routes.ts';

const JSON_HEADERS = [['content-type', 'application/json']] as const;

export interface SharedInferenceRouteDeps {
  gateway: SharedModelGateway;
  keys: KeyAuthenticator;
  /** Per-key limits (429 rate_limit_exceeded, x-ratelimit-* headers on every answer of a limited key). */
  limiter: KeyLimiter;
  bodyLimit: number;
  keepAliveMs: number;
  streamBufferLimit: number;
}

/**
 * The shared, OpenAI-compatible endpoint: /api/inference/v1/{chat/completions,models,models/{id},responses,completions,
 * messages,messages/count_tokens}.
 * A model id holds a `/`: `GET /models/{id}` takes it percent-encoded (`local%2Fm`, as the SDKs send it) or
 * as two path segments (`local/m`).
 */
export function sharedInferenceRoutes(d: SharedInferenceRouteDeps): Route[] {
  const retrieveModel: Route['handler'] = (ex) => {
    const key = d.keys.authenticate(bearerToken(ex.authorization));
    ex.addHeaders(d.limiter.peek(key.keyId, key.limits));
    ex.send(200, d.gateway.modelBody(ex.params.join('/')), JSON_HEADERS);
  };
  return [
    {
      method: 'POST',
      pattern: '/api/inference/v1/chat/completions',
      name: 'chat_completions',
      body: { kind: 'json', limit: d.bodyLimit },
      handler: (ex) => {
        return withKeyAdmission(ex, d.keys, d.limiter, async (json, meter, caller) => {
          const request = validateChatRequest(json);
          await respondToChat(
            ex,
            { stream: request.stream, includeUsage: request.includeUsage, model: d.gateway.modelId, keepAliveMs: d.keepAliveMs, streamBufferLimit: d.streamBufferLimit },
            (sink) => d.gateway.startChat(request, meter(sink), caller),
          );
        });
      },
    },
    {
      method: 'GET',
      pattern: '/api/inference/v1/models',
      name: 'models',
      handler: (ex) => {
        const key = d.keys.authenticate(bearerToken(ex.authorization));
        ex.addHeaders(d.limiter.peek(key.keyId, key.limits));
        ex.send(200, d.gateway.modelsBody(), JSON_HEADERS);
      },
    },
    { method: 'GET', pattern: '/api/inference/v1/models/:id', name: 'model', handler: retrieveModel },
    { method: 'GET', pattern: '/api/inference/v1/models/:namespace/:name', name: 'model', handler: retrieveModel },
    ...responsesRoutes(d),
    ...completionsRoutes(d),
    ...messagesRoutes(d),
  ];
}
