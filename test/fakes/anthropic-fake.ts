import { isObj, num } from './chat-completions-dialect.ts';
import { fakeId, FakeUpstream, type FakeUpstreamOptions, type NormalizedRequest, type VendorDialect, type VendorResponse } from './fake-upstream.ts';

/**
 * Anthropic Messages API (docs.anthropic.com/en/api/messages, /en/api/messages-streaming, /en/api/errors):
 * POST /v1/messages with `x-api-key` and a required `anthropic-version` header; `max_tokens` required;
 * roles only user | assistant (a "system" role in messages is a 400; the system prompt is top-level
 * `system`); temperature 0..1. Errors `{"type":"error","error":{"type","message"},"request_id"}`
 * (429 rate_limit_error, 500 api_error, 529 overloaded_error). Streams are named SSE events:
 * `event: <type>\ndata: <json>\n\n` — message_start, content_block_start, ping, content_block_delta...,
 * content_block_stop, message_delta (stop_reason, usage.output_tokens), message_stop; errors as `event: error`.
 */
const anthropicError = (status: number, type: string, message: string, headers?: Record<string, string>): VendorResponse => ({
  status,
  headers: { 'request-id': `req_${fakeId()}`, ...headers },
  body: { type: 'error', error: { type, message }, request_id: `req_${fakeId()}` },
});

const ERROR_TYPES: Record<number, string> = {
  400: 'invalid_request_error', 401: 'authentication_error', 403: 'permission_error', 404: 'not_found_error',
  413: 'request_too_large', 429: 'rate_limit_error', 500: 'api_error', 529: 'overloaded_error',
};

const namedEvent = (type: string, payload: Record<string, unknown>): string => `event: ${type}\ndata: ${JSON.stringify({ type, ...payload })}\n\n`;

function textOf(content: unknown): string {
  if (typeof content === 'string') return content;
  if (Array.isArray(content)) return content.map((b) => (isObj(b) && typeof b.text === 'string' ? b.text : '')).join('');
  return '';
}

export const anthropicDialect: VendorDialect = {
  name: 'anthropic',
  basePath: '',
  stopReason: 'end_turn',
  streamHeaders: { 'content-type': 'text/event-stream; charset=utf-8', 'cache-control': 'no-cache', 'request-id': `req_${fakeId()}` },
  route(method, url, body) {
    if (method !== 'POST' || url.pathname !== '/v1/messages') return null;
    const b = isObj(body) ? body : {};
    return { stream: b.stream === true, model: typeof b.model === 'string' ? b.model : '' };
  },
  apiKeyOf: (headers) => (typeof headers['x-api-key'] === 'string' ? headers['x-api-key'] : undefined),
  unauthorized: () => anthropicError(401, 'authentication_error', 'invalid x-api-key'),
  validate(headers, body) {
    if (typeof headers['anthropic-version'] !== 'string') return anthropicError(400, 'invalid_request_error', 'anthropic-version: header is required');
    if (!isObj(body)) return anthropicError(400, 'invalid_request_error', 'Invalid JSON');
    if (typeof body.max_tokens !== 'number') return anthropicError(400, 'invalid_request_error', 'max_tokens: Field required');
    if (!Array.isArray(body.messages) || body.messages.length === 0) return anthropicError(400, 'invalid_request_error', 'messages: Field required');
    for (const [i, m] of body.messages.entries()) {
      if (!isObj(m) || (m.role !== 'user' && m.role !== 'assistant')) {
        return anthropicError(400, 'invalid_request_error', `messages.${i}.role: Input should be 'user' or 'assistant'`);
      }
    }
    if (typeof body.temperature === 'number' && (body.temperature < 0 || body.temperature > 1)) {
      return anthropicError(400, 'invalid_request_error', 'temperature: range: 0..1');
    }
    for (const field of ['seed', 'presence_penalty', 'frequency_penalty', 'stop', 'n', 'user']) {
      if (field in body) return anthropicError(400, 'invalid_request_error', `${field}: Extra inputs are not permitted`);
    }
    return null;
  },
  error(status, message, retryAfter) {
    const type = ERROR_TYPES[status] ?? (status >= 500 ? 'api_error' : 'invalid_request_error');
    const headers = retryAfter !== undefined ? { 'retry-after': retryAfter } : undefined;
    const defaults: Record<string, string> = {
      rate_limit_error: 'This request would exceed the rate limit for your organization of 50 requests per minute.',
      overloaded_error: 'Overloaded',
      api_error: 'Internal server error',
      not_found_error: 'model: claude-nope',
    };
    return anthropicError(status, type, message ?? defaults[type] ?? 'Invalid request', headers);
  },
  json(reply, model) {
    return {
      id: `msg_${fakeId()}`,
      type: 'message',
      role: 'assistant',
      model,
      content: [{ type: 'text', text: reply.text }],
      stop_reason: reply.finishReason,
      stop_sequence: null,
      usage: { input_tokens: reply.usage.prompt, cache_creation_input_tokens: 0, cache_read_input_tokens: 0, output_tokens: reply.usage.completion },
    };
  },
  stream(reply, model) {
    return {
      head: [
        namedEvent('message_start', {
          message: {
            id: `msg_${fakeId()}`, type: 'message', role: 'assistant', model, content: [], stop_reason: null, stop_sequence: null,
            usage: { input_tokens: reply.usage.prompt, cache_creation_input_tokens: 0, cache_read_input_tokens: 0, output_tokens: 1 },
          },
        }),
        namedEvent('content_block_start', { index: 0, content_block: { type: 'text', text: '' } }),
        namedEvent('ping', {}),
      ],
      pieces: reply.pieces.map((p) => namedEvent('content_block_delta', { index: 0, delta: { type: 'text_delta', text: p } })),
      tail: [
        namedEvent('content_block_stop', { index: 0 }),
        namedEvent('message_delta', { delta: { stop_reason: reply.finishReason, stop_sequence: null }, usage: { output_tokens: reply.usage.completion } }),
        namedEvent('message_stop', {}),
      ],
    };
  },
  streamError: (message) => namedEvent('error', { error: { type: 'overloaded_error', message } }),
  describe(body): NormalizedRequest {
    const b = isObj(body) ? body : {};
    const messages = Array.isArray(b.messages) ? b.messages.filter(isObj) : [];
    return {
      model: typeof b.model === 'string' ? b.model : '',
      stream: b.stream === true,
      system: b.system === undefined ? undefined : textOf(b.system),
      messages: messages.map((m) => ({ role: m.role === 'assistant' ? 'assistant' : 'user', content: textOf(m.content) })),
      temperature: num(b.temperature),
      topP: num(b.top_p),
      maxTokens: num(b.max_tokens),
      stop: Array.isArray(b.stop_sequences) ? b.stop_sequences.map(String) : undefined,
      seed: undefined,
    };
  },
};

export const startAnthropicFake = (options?: FakeUpstreamOptions): Promise<FakeUpstream> => FakeUpstream.start(anthropicDialect, options);
