import { chatCompletionsBase, chatCompletionsToolProblem, dataEvent, DONE_EVENT } from './chat-completions-dialect.ts';
import type { ResolvedReply, VendorDialect, VendorResponse } from './dialect.ts';
import { fakeId, isObj } from './vendor-json.ts';

/**
 * Mistral chat completions (docs.mistral.ai/api, client-ts ChatCompletionRequest): POST /v1/chat/completions,
 * Bearer auth; fields `max_tokens`, `random_seed`; unknown fields are rejected with 422 (`extra_forbidden`,
 * FastAPI `detail` list), which catches OpenAI-only fields such as `seed`, `user` or `stream_options`.
 * Finish reasons stop | length | model_length | error | tool_calls. Streams end with `data: [DONE]`, the
 * last content chunk carrying finish_reason and `usage`. 401 is `{"message":"Unauthorized","request_id":...}`;
 * other errors `{"object":"error","message","type","param","code"}` (Mistral's error shapes are not
 * formally documented; these follow what its API returns).
 */
const MISTRAL_FIELDS = new Set([
  'model',
  'messages',
  'temperature',
  'top_p',
  'max_tokens',
  'stream',
  'stop',
  'random_seed',
  'response_format',
  'tools',
  'tool_choice',
  'presence_penalty',
  'frequency_penalty',
  'n',
  'prediction',
  'parallel_tool_calls',
  'safe_prompt',
  'prompt_mode',
  'metadata',
]);

const mistralError = (
  status: number,
  message: unknown,
  type: string,
  headers?: Record<string, string>,
): VendorResponse => ({
  status,
  headers,
  body: { object: 'error', message, type, param: null, code: null },
});

/** Mistral's tool_calls: 9-character alphanumeric ids, arguments as JSON text, an index per call. */
const toolCalls = (calls: ResolvedReply['toolCalls']) =>
  calls.map((c, index) => ({
    id: fakeId(9),
    type: 'function',
    function: { name: c.name, arguments: JSON.stringify(c.arguments) },
    index,
  }));

export const mistralDialect: VendorDialect = {
  name: 'mistral',
  ...chatCompletionsBase(['max_tokens'], 'random_seed'),
  unauthorized: () => ({ status: 401, body: { message: 'Unauthorized', request_id: fakeId(32) } }),
  validate(_headers, body) {
    if (!isObj(body)) return mistralError(400, 'Invalid JSON body', 'invalid_request_error');
    const extra = Object.keys(body).filter((k) => !MISTRAL_FIELDS.has(k));
    if (extra.length > 0) {
      return mistralError(
        422,
        {
          detail: extra.map((k) => ({
            type: 'extra_forbidden',
            loc: ['body', k],
            msg: 'Extra inputs are not permitted',
            input: body[k],
          })),
        },
        'invalid_request_message_error',
      );
    }
    if (!Array.isArray(body.messages) || body.messages.length === 0) {
      return mistralError(
        422,
        { detail: [{ type: 'missing', loc: ['body', 'messages'], msg: 'Field required', input: null }] },
        'invalid_request_message_error',
      );
    }
    const toolProblem = chatCompletionsToolProblem(body, ['none', 'auto', 'any', 'required']);
    return toolProblem === null ? null : mistralError(400, toolProblem, 'invalid_request_error');
  },
  error(status, message, retryAfter) {
    const headers = retryAfter !== undefined ? { 'retry-after': retryAfter } : undefined;
    if (status === 401)
      return { status, headers, body: { message: message ?? 'Unauthorized', request_id: fakeId(32) } };
    if (status === 429) return mistralError(429, message ?? 'Requests rate limit exceeded', 'rate_limited', headers);
    if (status >= 500) return mistralError(status, message ?? 'Service unavailable.', 'internal_server_error', headers);
    return mistralError(status, message ?? 'Invalid model: mistral-nope', 'invalid_model', headers);
  },
  json(reply, model) {
    return {
      id: fakeId(32),
      object: 'chat.completion',
      model,
      usage: {
        prompt_tokens: reply.usage.prompt,
        completion_tokens: reply.usage.completion,
        total_tokens: reply.usage.prompt + reply.usage.completion,
      },
      created: Math.floor(Date.now() / 1000),
      choices: [
        {
          index: 0,
          message: {
            role: 'assistant',
            tool_calls: reply.toolCalls.length > 0 ? toolCalls(reply.toolCalls) : null,
            content: reply.text,
          },
          finish_reason: reply.finishReason,
        },
      ],
    };
  },
  stream(reply, model) {
    const base = { id: fakeId(32), object: 'chat.completion.chunk', created: Math.floor(Date.now() / 1000), model };
    const chunk = (delta: unknown, finish: string | null, extra: Record<string, unknown> = {}) =>
      dataEvent({ ...base, choices: [{ index: 0, delta, finish_reason: finish }], ...extra });
    const usage = {
      prompt_tokens: reply.usage.prompt,
      total_tokens: reply.usage.prompt + reply.usage.completion,
      completion_tokens: reply.usage.completion,
    };
    return {
      head: [chunk({ role: 'assistant', content: '' }, null)],
      pieces: reply.pieces.map((p) => chunk({ content: p }, null)),
      // Mistral streams each tool call whole, in one chunk.
      tail: [
        ...(reply.toolCalls.length > 0 ? [chunk({ content: '', tool_calls: toolCalls(reply.toolCalls) }, null)] : []),
        chunk({ content: '' }, reply.finishReason, { usage }),
        DONE_EVENT,
      ],
    };
  },
  streamError: (message) =>
    dataEvent({ object: 'error', message, type: 'internal_server_error', param: null, code: null }),
};
