import type { KeyAuthenticator } from '../accounts/authenticator.ts';
import type { KeyLimiting } from '../limits/key-limiter.ts';
import type { InferenceCaller } from './prompt-cache-scope.ts';
import type { ModelLease } from '../engine/model-registry.ts';
import type { SharedModelGateway } from './shared-model-gateway.ts';
import type { ChatDeltaSink } from '../protocol/chat-delta.ts';
import { type AnswerFormat, type DeltaProducer, respondWith } from './chat-responder.ts';
import type { HttpExchange } from '../http/http-exchange.ts';
import type { Route } from '../http/router.ts';
import { withKeyAdmission } from './key-admission.ts';

/** What every generating route of the shared model needs. */
export interface GenerationRouteDeps {
  gateway: SharedModelGateway;
  keys: KeyAuthenticator;
  /** Per-key limits (429 rate_limit_exceeded, x-ratelimit-* headers on every answer of a limited key). */
  limiter: KeyLimiting;
  bodyLimit: number;
  keepAliveMs: number;
  streamBufferLimit: number;
}

/** One request's answer: the model it names, whether it streams, how its deltas are written, and how its generation starts (on the model's lease). */
export interface GenerationAnswer {
  model: string;
  stream: boolean;
  format: AnswerFormat;
  start: (sink: ChatDeltaSink, caller: InferenceCaller, model: ModelLease) => DeltaProducer;
}

/**
 * A `POST` route that generates with the shared model (chat completions, Responses, completions, Messages): a JSON
 * body under --body-limit, the caller's key admitted under its limits (withKeyAdmission), the body validated by
 * `plan` (which knows the caller) into an answer, then the one responder (respondWith) with the generation metered against the key.
 * `errorBody` / `token`: the API's own error shape and where it carries the key (default: Authorization: Bearer).
 */
export function generationRoute(
  d: GenerationRouteDeps,
  spec: {
    pattern: string;
    name: string;
    errorBody?: Route['errorBody'];
    token?: (ex: HttpExchange) => string | undefined;
  },
  plan: (json: unknown, caller: InferenceCaller) => GenerationAnswer | Promise<GenerationAnswer>,
): Route {
  return {
    method: 'POST',
    pattern: spec.pattern,
    name: spec.name,
    body: { kind: 'json', limit: d.bodyLimit },
    ...(spec.errorBody ? { errorBody: spec.errorBody } : {}),
    handler: (ex) =>
      withKeyAdmission(
        ex,
        d.keys,
        d.limiter,
        async (json, meter, caller) => {
          const a = await plan(json, caller);
          await withModel(d.gateway, a.model, (model) =>
            respondWith(
              ex,
              { stream: a.stream, keepAliveMs: d.keepAliveMs, streamBufferLimit: d.streamBufferLimit },
              a.format,
              (sink) => a.start(meter(sink), caller, model),
            ),
          );
        },
        spec.token?.(ex),
      ),
  };
}

/** Runs `answer` on the lease of model `id` (SharedModelGateway.acquire): loaded on demand, never unloaded before `answer` settles. */
export async function withModel<T>(
  gateway: SharedModelGateway,
  id: string,
  answer: (model: ModelLease) => Promise<T>,
): Promise<T> {
  const lease = await gateway.acquire(id);
  try {
    return await answer(lease);
  } finally {
    lease.release();
  }
}
