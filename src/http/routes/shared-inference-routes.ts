import type { KeyAuthenticator } from '../../gateway/authenticator.ts';
import type { KeyLimiter } from '../../gateway/key-limiter.ts';
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
  /** Per-key limits (429 rate_limit_exceeded, x-ratelimit-* headers on every answer of a limited key). */
  limiter: KeyLimiter;
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
        const key = d.keys.authenticate(bearerToken(ex.authorization));
        const admission = d.limiter.admit(key.keyId, key.limits);
        ex.addHeaders(admission.headers);
        if (!admission.ok) throw admission.error;
        const { lease } = admission;
        try {
          const json = await body;
          if (json === undefined) throw invalidRequest('Request body is required', null, 'missing_body');
          const request = validateChatRequest(json);
          await respondToChat(
            ex,
            { stream: request.stream, includeUsage: request.includeUsage, model: d.gateway.modelId, keepAliveMs: d.keepAliveMs, streamBufferLimit: d.streamBufferLimit },
            (sink) =>
              d.gateway.startChat(request, {
                push: (delta) => {
                  if (delta.type === 'finish' && delta.usage !== undefined) lease.recordTokens(delta.usage.promptTokens + delta.usage.completionTokens);
                  sink.push(delta);
                },
                fail: (e) => sink.fail(e),
              }),
          );
        } finally {
          lease.release(); // every path: answered, failed, or the client went away (respondToChat resolves on abort)
        }
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
  ];
}
