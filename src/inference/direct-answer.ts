import { invalidRequest, toApiError } from '../errors/index.ts';
import { validateEmbeddingsRequest } from '../protocol/embeddings-request.ts';
import { embeddingsResponse } from '../protocol/embeddings-response.ts';
import { completionsPlan } from './completions-routes.ts';
import { namedAsSent } from './embeddings-routes.ts';
import { type GenerationAnswer, type GenerationRouteDeps, withModel } from './generation-route.ts';
import type { InferenceCaller } from './prompt-cache-scope.ts';
import { responsesPlan, type ResponsesRouteDeps } from './responses-routes.ts';
import { chatCompletionsPlan } from './shared-inference-routes.ts';

/** The URLs a request may name without an HTTP exchange (a Batch API line's `url`). */
export const DIRECT_URLS = ['/v1/chat/completions', '/v1/completions', '/v1/embeddings', '/v1/responses'] as const;
export type DirectUrl = (typeof DIRECT_URLS)[number];

/** One answer as the synchronous route would have sent it: its status and its JSON body (an error in OpenAI's shape). */
export interface DirectAnswer {
  status: number;
  body: unknown;
  /** Whether the failure is the server's state, not the request's (queue full, warming up, shutting down): worth another try later. */
  retryable: boolean;
}

/** A running direct answer: `done` settles with the answer; `cancel()` stops its generation (it then answers nothing useful). */
export interface DirectCall {
  done: Promise<DirectAnswer>;
  cancel(): void;
}

export type DirectEndpoint = (json: unknown, caller: InferenceCaller) => DirectCall;

/**
 * The shared endpoint's POST routes without HTTP: the same plans the routes use (chatCompletionsPlan, completionsPlan,
 * responsesPlan; the embeddings route's validation and answer), so a body answered here is exactly what the route
 * answers for it in non-streaming mode. No key admission and no per-key metering: the caller is trusted (the Batch API
 * authenticated its owner when the batch was made). A request asking to stream is refused (400 naming `stream`).
 * Main thread.
 */
export function directEndpoints(
  d: Pick<GenerationRouteDeps, 'gateway'> & Pick<ResponsesRouteDeps, 'responses'>,
): Record<DirectUrl, DirectEndpoint> {
  const generating =
    (plan: (json: unknown, caller: InferenceCaller) => GenerationAnswer | Promise<GenerationAnswer>): DirectEndpoint =>
    (json, caller) => {
      let cancelled = false;
      let cancelProducer: () => void = () => {
        cancelled = true;
      };
      const done = (async (): Promise<DirectAnswer> => {
        const a = await plan(json, caller);
        if (a.stream) throw invalidRequest('Streaming is not supported in a batch', 'stream', 'unsupported_value');
        return withModel(
          d.gateway,
          a.model,
          (model) =>
            new Promise<DirectAnswer>((resolve) => {
              if (cancelled) return resolve(answerOf(new Error('cancelled')));
              const producer = a.start(
                {
                  push: (delta) => {
                    a.format.push(delta);
                    if (delta.type === 'finish') resolve({ status: 200, body: a.format.body(), retryable: false });
                  },
                  fail: (e) => resolve(answerOf(e)),
                },
                caller,
                model,
              );
              cancelProducer = () => producer.cancel();
            }),
        );
      })().catch(answerOf);
      return { done, cancel: () => cancelProducer() };
    };
  const embeddings: DirectEndpoint = (json, caller) => {
    const cancelled = new AbortController();
    const done = (async (): Promise<DirectAnswer> => {
      const request = validateEmbeddingsRequest(json);
      const result = await withModel(d.gateway, request.model, (model) =>
        d.gateway.embed(model, request, caller, cancelled.signal),
      ).catch((e: unknown) => {
        throw namedAsSent(e, request);
      });
      return {
        status: 200,
        body: embeddingsResponse(request.model, result.vectors, request.encodingFormat, result.promptTokens),
        retryable: false,
      };
    })().catch(answerOf);
    return { done, cancel: () => cancelled.abort() };
  };
  return {
    '/v1/chat/completions': generating(chatCompletionsPlan(d)),
    '/v1/completions': generating(completionsPlan(d)),
    '/v1/responses': generating(responsesPlan(d)),
    '/v1/embeddings': embeddings,
  };
}

/** Statuses that say "not now" rather than "not this request". */
const RETRYABLE = new Set([429, 503]);

function answerOf(err: unknown): DirectAnswer {
  const e = toApiError(err);
  return { status: e.status, body: e.toBody(), retryable: RETRYABLE.has(e.status) };
}
