import type { GenerationSink } from '../../engine/generation.ts';
import type { KeyAuthenticator } from '../../gateway/authenticator.ts';
import type { SharedModelGateway } from '../../gateway/shared-model-gateway.ts';
import { invalidRequest } from '../../errors/index.ts';
import type { ChatDeltaSink } from '../../protocol/chat-delta.ts';
import { validateChatRequest } from '../../protocol/validate-chat-request.ts';
import { respondToChat } from '../chat-responder.ts';
import { readJsonBody } from '../json-body.ts';
import { bearerToken, type Route } from '../router.ts';
import { responsesRoutes } from './responses-routes.ts';

const JSON_HEADERS = [['content-type', 'application/json']] as const;

export interface SharedInferenceRouteDeps {
  gateway: SharedModelGateway;
  keys: KeyAuthenticator;
  bodyLimit: number;
  keepAliveMs: number;
  streamBufferLimit: number;
}

/**
 * Feeds the gateway's ChatDeltas to the GenerationSink-based chat responder. Content and finish only: tool
 * calls and logprobs are rendered once the ChatDelta responder (issue 11, helper `upstream`) replaces it,
 * when this adapter goes and the gateway's sink is passed straight through.
 */
function deltasToGenerationSink(sink: GenerationSink): ChatDeltaSink {
  return {
    push: (d) => {
      if (d.type === 'content') sink.onText(d.text, d.logprobs);
      else if (d.type === 'finish') {
        const u = d.usage ?? { promptTokens: 0, completionTokens: 0 };
        sink.onDone({ finishReason: d.reason === 'length' ? 'length' : 'stop', promptTokens: u.promptTokens, completionTokens: u.completionTokens, cachedTokens: u.cachedTokens ?? 0 });
      }
    },
    fail: (e) => sink.onError(e),
  };
}

/**
 * The shared, OpenAI-compatible endpoint: /api/inference/v1/{chat/completions,models,models/{id},responses}.
 * A model id holds a `/`: `GET /models/{id}` takes it percent-encoded (`local%2Fm`, as the SDKs send it) or
 * as two path segments (`local/m`).
 */
export function sharedInferenceRoutes(d: SharedInferenceRouteDeps): Route[] {
  const retrieveModel: Route['handler'] = (ex) => {
    d.keys.authenticate(bearerToken(ex.authorization));
    ex.send(200, d.gateway.modelBody(ex.params.join('/')), JSON_HEADERS);
  };
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
          { stream: request.stream, includeUsage: request.includeUsage, model: d.gateway.modelId, keepAliveMs: d.keepAliveMs, streamBufferLimit: d.streamBufferLimit, reportCachedTokens: true },
          (sink) => d.gateway.startChat(request, deltasToGenerationSink(sink)),
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
    { method: 'GET', pattern: '/api/inference/v1/models/:id', name: 'model', handler: retrieveModel },
    { method: 'GET', pattern: '/api/inference/v1/models/:namespace/:name', name: 'model', handler: retrieveModel },
    ...responsesRoutes(d),
  ];
}
