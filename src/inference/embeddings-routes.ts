import { ApiError, invalidRequest } from '../errors/index.ts';
import { validateEmbeddingsRequest, type EmbeddingsRequest } from '../protocol/embeddings-request.ts';
import { embeddingsResponse } from '../protocol/embeddings-response.ts';
import type { ChatDeltaSink } from '../protocol/chat-delta.ts';
import type { Route } from '../http/router.ts';
import { type GenerationRouteDeps, withModel } from './generation-route.ts';
import { withKeyAdmission } from './key-admission.ts';

export type EmbeddingsRouteDeps = GenerationRouteDeps;

/**
 * `POST /api/inference/v1/embeddings`: OpenAI's embeddings API over the shared model. The same keys, limits
 * and error shapes as the generating routes (withKeyAdmission): the body under --body-limit, validated into
 * an EmbeddingsRequest (400s naming the field), embedded by the gateway (the engine's queue and admission
 * rules, at the key's priority in the fair scheduler, 503 while warming up), answered as one JSON `list`; the inputs' tokens count against the key.
 */
export function embeddingsRoutes(d: EmbeddingsRouteDeps): Route[] {
  return [
    {
      method: 'POST',
      pattern: '/api/inference/v1/embeddings',
      name: 'embeddings',
      body: { kind: 'json', limit: d.bodyLimit },
      handler: (ex) =>
        withKeyAdmission(ex, d.keys, d.limiter, async (json, meter, caller) => {
          const request = validateEmbeddingsRequest(json);
          const result = await withModel(d.gateway, request.model, (model) =>
            d.gateway.embed(model, request, caller, ex.signal),
          ).catch((e: unknown) => {
            throw namedAsSent(e, request);
          });
          // The key's token count is kept by the meter from a finish delta's usage, as for a generation.
          meter(NO_SINK).push({
            type: 'finish',
            reason: 'stop',
            usage: { promptTokens: result.promptTokens, completionTokens: 0, cachedTokens: 0 },
          });
          ex.sendJson(
            200,
            embeddingsResponse(request.model, result.vectors, request.encodingFormat, result.promptTokens),
          );
        }),
    },
  ];
}

/** The engine names the inputs `input[i]`; a request that sent one input (not a list) calls it `input`. */
export function namedAsSent(e: unknown, request: EmbeddingsRequest): unknown {
  if (!request.single || !(e instanceof ApiError) || e.param !== 'input[0]') return e;
  return invalidRequest(e.message.replace("'input[0]'", "'input'"), 'input', e.code);
}

/** Where the metered finish delta goes: nowhere (the answer is the JSON body). */
const NO_SINK: ChatDeltaSink = { push: () => {}, fail: () => {} };
