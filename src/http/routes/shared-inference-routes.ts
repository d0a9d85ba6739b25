import type { KeyAuthenticator } from '../../gateway/authenticator.ts';
import type { SharedModelGateway } from '../../gateway/shared-model-gateway.ts';
import { invalidRequest } from '../../errors/index.ts';
import { validateChatRequest } from '../../protocol/validate-chat-request.ts';
import { respondToChat } from '../chat-responder.ts';
import { readJsonBody } from '../json-body.ts';
import { bearerToken, type Route } from '../router.ts';

const JSON_HEADERS = [['content-type', 'application/json']] as const;

export interface SharedInferenceRouteDeps {
  gateway: SharedModelGateway;
  keys: KeyAuthenticator;
  bodyLimit: number;
  keepAliveMs: number;
  streamBufferLimit: number;
}

/** The shared, OpenAI-compatible endpoint: /api/inference/v1/{chat/completions,models}. */
export function sharedInferenceRoutes(d: SharedInferenceRouteDeps): Route[] {
  return [
    {
      method: 'POST',
      pattern: '/api/inference/v1/chat/completions',
      name: 'chat_completions',
      handler: async (ex) => {
        const body = readJsonBody(ex, d.bodyLimit); // attach onData synchronously
        body.catch(() => {});
        d.keys.authenticate(bearerToken(ex.authorization));
        const json = await body;
        if (json === undefined) throw invalidRequest('Request body is required', null, 'missing_body');
        const request = validateChatRequest(json);
        await respondToChat(
          ex,
          { stream: request.stream, includeUsage: request.includeUsage, model: d.gateway.modelId, keepAliveMs: d.keepAliveMs, streamBufferLimit: d.streamBufferLimit },
          (sink) => d.gateway.startChat(request, sink),
        );
      },
    },
    {
      method: 'GET',
      pattern: '/api/inference/v1/models',
      name: 'models',
      handler: (ex) => {
        d.keys.authenticate(bearerToken(ex.authorization));
        ex.send(200, d.gateway.modelsBody(), JSON_HEADERS);
      },
    },
  ];
}
