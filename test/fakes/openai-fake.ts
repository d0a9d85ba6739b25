import { chatCompletionsBase, chatCompletionsToolProblem, dataEvent, DONE_EVENT } from './chat-completions-dialect.ts';
import type { VendorDialect, VendorResponse } from './dialect.ts';
import { fakeId, isObj } from './vendor-json.ts';

/**
 * OpenAI chat completions (platform.openai.com/docs/api-reference/chat): POST /v1/chat/completions,
 * Bearer auth, `{"error":{"message","type","param","code"}}` errors, SSE `data: <chunk>\n\n` ending with
 * `data: [DONE]\n\n`; with stream_options.include_usage every chunk carries `"usage":null` and a last
 * chunk has empty `choices` and the usage.
 * One deliberate difference: the 401 message echoes the sent key verbatim (OpenAI masks it), so tests
 * prove Hearth scrubs keys out of upstream messages.
 */
const openAiError = (
  status: number,
  message: string,
  type: string,
  code: string | null,
  headers?: Record<string, string>,
): VendorResponse => ({
  status,
  headers: { 'x-request-id': `req_${fakeId()}`, ...headers },
  body: { error: { message, type, param: null, code } },
});

export const openAiDialect: VendorDialect = {
  name: 'openai',
  ...chatCompletionsBase(['max_completion_tokens', 'max_tokens'], 'seed'),
  unauthorized: (key) =>
    key === undefined
      ? openAiError(
          401,
          "You didn't provide an API key. You need to provide your API key in an Authorization header using Bearer auth (i.e. Authorization: Bearer YOUR_KEY).",
          'invalid_request_error',
          null,
        )
      : openAiError(
          401,
          `Incorrect API key provided: ${key}. You can find your API key at https://platform.openai.com/account/api-keys.`,
          'invalid_request_error',
          'invalid_api_key',
        ),
  validate(_headers, body) {
    if (!isObj(body))
      return openAiError(400, 'We could not parse the JSON body of your request.', 'invalid_request_error', null);
    if (!Array.isArray(body.messages) || body.messages.length === 0)
      return openAiError(
        400,
        "Missing required parameter: 'messages'.",
        'invalid_request_error',
        'missing_required_parameter',
      );
    if (body.stream_options !== undefined && body.stream !== true) {
      return openAiError(
        400,
        "The 'stream_options' parameter is only allowed when 'stream' is enabled.",
        'invalid_request_error',
        null,
      );
    }
    if (typeof body.temperature === 'number' && (body.temperature < 0 || body.temperature > 2)) {
      return openAiError(
        400,
        `Invalid 'temperature': decimal above maximum value. Expected a value <= 2, but got ${body.temperature} instead.`,
        'invalid_request_error',
        'decimal_above_max_value',
      );
    }
    const toolProblem = chatCompletionsToolProblem(body, ['none', 'auto', 'required']);
    return toolProblem === null ? null : openAiError(400, toolProblem, 'invalid_request_error', null);
  },
  error(status, message, retryAfter) {
    const headers = retryAfter !== undefined ? { 'retry-after': retryAfter } : undefined;
    if (status === 429)
      return openAiError(
        429,
        message ?? 'Rate limit reached for gpt-4o-mini on requests per min (RPM): Limit 3, Used 3, Requested 1.',
        'requests',
        'rate_limit_exceeded',
        headers,
      );
    if (status >= 500)
      return openAiError(
        status,
        message ?? 'The server had an error while processing your request. Sorry about that!',
        'server_error',
        null,
        headers,
      );
    if (status === 404)
      return openAiError(
        404,
        message ?? 'The model `gpt-nope` does not exist or you do not have access to it.',
        'invalid_request_error',
        'model_not_found',
        headers,
      );
    if (status === 401 || status === 403)
      return openAiError(
        status,
        message ?? 'You are not allowed to sample from this model',
        'invalid_request_error',
        null,
        headers,
      );
    return openAiError(status, message ?? 'Invalid request', 'invalid_request_error', null, headers);
  },
  json(reply, model) {
    return {
      id: `chatcmpl-${fakeId()}`,
      object: 'chat.completion',
      created: Math.floor(Date.now() / 1000),
      model,
      choices: [
        {
          index: 0,
          message: {
            role: 'assistant',
            content: reply.toolCalls.length > 0 && reply.text === '' ? null : reply.text,
            refusal: null,
            annotations: [],
            ...(reply.toolCalls.length > 0
              ? {
                  tool_calls: reply.toolCalls.map((c, i) => ({
                    id: `call_${i}${fakeId(20)}`,
                    type: 'function',
                    function: { name: c.name, arguments: JSON.stringify(c.arguments) },
                  })),
                }
              : {}),
          },
          logprobs: null,
          finish_reason: reply.finishReason,
        },
      ],
      usage: {
        prompt_tokens: reply.usage.prompt,
        completion_tokens: reply.usage.completion,
        total_tokens: reply.usage.prompt + reply.usage.completion,
        prompt_tokens_details: { cached_tokens: 0, audio_tokens: 0 },
        completion_tokens_details: {
          reasoning_tokens: 0,
          audio_tokens: 0,
          accepted_prediction_tokens: 0,
          rejected_prediction_tokens: 0,
        },
      },
      service_tier: 'default',
      system_fingerprint: 'fp_fake',
    };
  },
  stream(reply, model, body) {
    const includeUsage = isObj(body) && isObj(body.stream_options) && body.stream_options.include_usage === true;
    const base = {
      id: `chatcmpl-${fakeId()}`,
      object: 'chat.completion.chunk',
      created: Math.floor(Date.now() / 1000),
      model,
      service_tier: 'default',
      system_fingerprint: 'fp_fake',
    };
    const chunk = (delta: unknown, finish: string | null) =>
      dataEvent({
        ...base,
        choices: [{ index: 0, delta, logprobs: null, finish_reason: finish }],
        ...(includeUsage ? { usage: null } : {}),
      });
    const tail = [chunk({}, reply.finishReason)];
    if (includeUsage) {
      tail.push(
        dataEvent({
          ...base,
          choices: [],
          usage: {
            prompt_tokens: reply.usage.prompt,
            completion_tokens: reply.usage.completion,
            total_tokens: reply.usage.prompt + reply.usage.completion,
          },
        }),
      );
    }
    tail.push(DONE_EVENT);
    // Tool calls stream as OpenAI does: a call's first fragment has index, id, type and name with arguments '', then argument fragments.
    const toolChunks = reply.toolCalls.flatMap((c, index) => [
      chunk(
        {
          tool_calls: [
            { index, id: `call_${index}${fakeId(20)}`, type: 'function', function: { name: c.name, arguments: '' } },
          ],
        },
        null,
      ),
      ...c.pieces.map((p) => chunk({ tool_calls: [{ index, function: { arguments: p } }] }, null)),
    ]);
    return {
      head: [
        chunk(
          { role: 'assistant', content: reply.toolCalls.length > 0 && reply.text === '' ? null : '', refusal: null },
          null,
        ),
      ],
      pieces: reply.pieces.map((p) => chunk({ content: p }, null)),
      tail: [...toolChunks, ...tail],
    };
  },
  streamError: (message) => dataEvent({ error: { message, type: 'server_error', param: null, code: null } }),
};
