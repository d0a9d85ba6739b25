import { isObj, num } from './chat-completions-dialect.ts';
import { fakeId, FakeUpstream, type FakeUpstreamOptions, type NormalizedRequest, type VendorDialect, type VendorResponse } from './fake-upstream.ts';

/**
 * Gemini API (ai.google.dev/api/generate-content): POST /v1beta/models/{model}:generateContent and
 * :streamGenerateContent; key in `x-goog-api-key` (or `?key=`). With `alt=sse` the stream is SSE with
 * `data: <GenerateContentResponse>` events separated by `\r\n\r\n` (the framing Google's JS SDK parses)
 * and no end marker: the last chunk carries finishReason and the full usageMetadata. (Without `alt=sse`
 * real Gemini streams one JSON array; this fake answers that with a 400, as Hearth never asks for it.) Errors are google.rpc.Status:
 * `{"error":{"code","message","status","details"}}`; a wrong key is 400 INVALID_ARGUMENT with an ErrorInfo
 * reason API_KEY_INVALID, a missing key 403 PERMISSION_DENIED; 429 RESOURCE_EXHAUSTED carries its retry
 * hint as google.rpc.RetryInfo.retryDelay in the body (so a scripted retryAfter goes there, not in a header).
 * Roles must be user | model.
 */
const STATUS_NAMES: Record<number, string> = {
  400: 'INVALID_ARGUMENT', 401: 'UNAUTHENTICATED', 403: 'PERMISSION_DENIED', 404: 'NOT_FOUND',
  429: 'RESOURCE_EXHAUSTED', 500: 'INTERNAL', 503: 'UNAVAILABLE', 504: 'DEADLINE_EXCEEDED',
};

const googleError = (code: number, message: string, details?: unknown[]): VendorResponse => ({
  status: code,
  body: { error: { code, message, status: STATUS_NAMES[code] ?? (code >= 500 ? 'INTERNAL' : 'FAILED_PRECONDITION'), ...(details ? { details } : {}) } },
});

const ROUTE = /^\/v1beta\/models\/([^/:]+):(generateContent|streamGenerateContent)$/;

function usageMetadata(prompt: number, completion: number | undefined): Record<string, unknown> {
  return {
    promptTokenCount: prompt,
    ...(completion !== undefined ? { candidatesTokenCount: completion } : {}),
    totalTokenCount: prompt + (completion ?? 0),
    promptTokensDetails: [{ modality: 'TEXT', tokenCount: prompt }],
  };
}

export const geminiDialect: VendorDialect = {
  name: 'gemini',
  basePath: '',
  stopReason: 'STOP',
  streamHeaders: { 'content-type': 'text/event-stream', 'cache-control': 'no-cache' },
  route(method, url) {
    const match = ROUTE.exec(url.pathname);
    if (method !== 'POST' || match === null) return null;
    return { stream: match[2] === 'streamGenerateContent', model: decodeURIComponent(match[1] ?? '') };
  },
  apiKeyOf: (headers, url) => (typeof headers['x-goog-api-key'] === 'string' ? headers['x-goog-api-key'] : (url.searchParams.get('key') ?? undefined)),
  unauthorized: (key) =>
    key === undefined
      ? googleError(403, "Method doesn't allow unregistered callers (callers without established identity). Please use API Key or other form of API consumer identity to call this API.")
      : googleError(400, 'API key not valid. Please pass a valid API key.', [
          { '@type': 'type.googleapis.com/google.rpc.ErrorInfo', reason: 'API_KEY_INVALID', domain: 'googleapis.com', metadata: { service: 'generativelanguage.googleapis.com' } },
          { '@type': 'type.googleapis.com/google.rpc.LocalizedMessage', locale: 'en-US', message: 'API key not valid. Please pass a valid API key.' },
        ]),
  validate(_headers, body, url) {
    if (ROUTE.exec(url.pathname)?.[2] === 'streamGenerateContent' && url.searchParams.get('alt') !== 'sse') {
      // Real Gemini would answer a streamed JSON array here; this fake implements only the SSE variant.
      return googleError(400, 'fake gemini: only streamGenerateContent?alt=sse is implemented');
    }
    if (!isObj(body)) return googleError(400, 'Invalid JSON payload received.');
    if (!Array.isArray(body.contents) || body.contents.length === 0) return googleError(400, '* GenerateContentRequest.contents: contents is not specified');
    for (const c of body.contents) {
      if (!isObj(c) || (c.role !== undefined && c.role !== 'user' && c.role !== 'model')) return googleError(400, 'Please use a valid role: user, model.');
    }
    return null;
  },
  error(status, message, retryAfter) {
    if (status === 429) {
      const details = retryAfter !== undefined ? [{ '@type': 'type.googleapis.com/google.rpc.RetryInfo', retryDelay: `${retryAfter}s` }] : undefined;
      return googleError(429, message ?? 'You exceeded your current quota, please check your plan and billing details.', details);
    }
    if (status === 503) return googleError(503, message ?? 'The model is overloaded. Please try again later.');
    if (status >= 500) return googleError(status, message ?? 'An internal error has occurred. Please retry or report in https://developers.generativeai.google/guide/troubleshooting');
    if (status === 404) return googleError(404, message ?? 'models/gemini-nope is not found for API version v1beta, or is not supported for generateContent.');
    return googleError(status, message ?? 'Request contains an invalid argument.');
  },
  json(reply, model) {
    return {
      candidates: [{ content: { parts: [{ text: reply.text }], role: 'model' }, finishReason: reply.finishReason, index: 0 }],
      usageMetadata: usageMetadata(reply.usage.prompt, reply.usage.completion),
      modelVersion: model,
      responseId: fakeId(),
    };
  },
  stream(reply, model, _body) {
    const responseId = fakeId();
    const pieces = reply.pieces.length > 0 ? reply.pieces : [''];
    const frames = pieces.map((text, i) => {
      const last = i === pieces.length - 1;
      return {
        candidates: [{ content: { parts: [{ text }], role: 'model' }, ...(last ? { finishReason: reply.finishReason } : {}), index: 0 }],
        usageMetadata: usageMetadata(reply.usage.prompt, last ? reply.usage.completion : undefined),
        modelVersion: model,
        responseId,
      };
    });
    return { head: [], pieces: frames.map((f) => `data: ${JSON.stringify(f)}\r\n\r\n`), tail: [] };
  },
  streamError: (message) => `data: ${JSON.stringify({ error: { code: 500, message, status: 'INTERNAL' } })}\r\n\r\n`,
  describe(body, url): NormalizedRequest {
    const b = isObj(body) ? body : {};
    const contents = Array.isArray(b.contents) ? b.contents.filter(isObj) : [];
    const partsText = (v: unknown) => (isObj(v) && Array.isArray(v.parts) ? v.parts.map((p) => (isObj(p) && typeof p.text === 'string' ? p.text : '')).join('') : '');
    const config = isObj(b.generationConfig) ? b.generationConfig : {};
    const match = ROUTE.exec(url.pathname);
    return {
      model: decodeURIComponent(match?.[1] ?? ''),
      stream: match?.[2] === 'streamGenerateContent',
      system: b.systemInstruction === undefined ? undefined : partsText(b.systemInstruction),
      messages: contents.map((c) => ({ role: c.role === 'model' ? 'assistant' : 'user', content: partsText(c) })),
      temperature: num(config.temperature),
      topP: num(config.topP),
      maxTokens: num(config.maxOutputTokens),
      stop: Array.isArray(config.stopSequences) ? config.stopSequences.map(String) : undefined,
      seed: num(config.seed),
    };
  },
};

export const startGeminiFake = (options?: FakeUpstreamOptions): Promise<FakeUpstream> => FakeUpstream.start(geminiDialect, options);
