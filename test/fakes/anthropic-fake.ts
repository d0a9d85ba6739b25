import type { NormalizedMessage, NormalizedRequest, ResolvedReply, VendorDialect, VendorResponse } from './dialect.ts';
import { fakeId, isObj, num } from './vendor-json.ts';

/**
 * Anthropic Messages API (docs.anthropic.com/en/api/messages, /en/api/messages-streaming, /en/api/errors):
 * POST /v1/messages with `x-api-key` and a required `anthropic-version` header; `max_tokens` required;
 * roles only user | assistant (a "system" role in messages is a 400; the system prompt is top-level
 * `system`); temperature 0..1. Errors `{"type":"error","error":{"type","message"},"request_id"}`
 * (429 rate_limit_error, 500 api_error, 529 overloaded_error). Streams are named SSE events:
 * `event: <type>\ndata: <json>\n\n` — message_start, content_block_start, ping, content_block_delta...,
 * content_block_stop, message_delta (stop_reason, usage.output_tokens), message_stop; errors as `event: error`.
 * Tools (docs.anthropic.com/en/docs/agents-and-tools/tool-use): `tools` [{name, description, input_schema}],
 * `tool_choice` {type: auto|any|tool|none, name?, disable_parallel_tool_use?}; an answer's calls are `tool_use`
 * content blocks (stop_reason tool_use), streamed as content_block_start {tool_use, input: {}} then
 * `input_json_delta` fragments; results go back as `tool_result` blocks, first in the next user message, one
 * for every tool_use of the previous assistant message. Structured outputs: `output_config.format` json_schema.
 */
const anthropicError = (
  status: number,
  type: string,
  message: string,
  headers?: Record<string, string>,
): VendorResponse => ({
  status,
  headers: { 'request-id': `req_${fakeId()}`, ...headers },
  body: { type: 'error', error: { type, message }, request_id: `req_${fakeId()}` },
});

const ERROR_TYPES: Record<number, string> = {
  400: 'invalid_request_error',
  401: 'authentication_error',
  403: 'permission_error',
  404: 'not_found_error',
  413: 'request_too_large',
  429: 'rate_limit_error',
  500: 'api_error',
  529: 'overloaded_error',
};

const namedEvent = (type: string, payload: Record<string, unknown>): string =>
  `event: ${type}\ndata: ${JSON.stringify({ type, ...payload })}\n\n`;

const TOOL_NAME = /^[a-zA-Z0-9_-]{1,64}$/;

/** The tool rules the Messages API enforces, as an error message or null. */
function toolProblem(body: Record<string, unknown>): string | null {
  const tools = body.tools;
  const names = new Set<string>();
  if (tools !== undefined) {
    if (!Array.isArray(tools)) return 'tools: Input should be a valid list';
    for (const [i, t] of tools.entries()) {
      if (!isObj(t) || typeof t.name !== 'string' || !TOOL_NAME.test(t.name))
        return `tools.${i}.name: String should match pattern '^[a-zA-Z0-9_-]{1,64}$'`;
      if (!isObj(t.input_schema) || t.input_schema.type !== 'object')
        return `tools.${i}.input_schema: Input schema must have type 'object'`;
      names.add(t.name);
    }
  }
  const choice = body.tool_choice;
  if (choice !== undefined) {
    if (!isObj(choice) || !['auto', 'any', 'tool', 'none'].includes(String(choice.type)))
      return "tool_choice.type: Input should be 'auto', 'any', 'tool' or 'none'";
    if (choice.type !== 'none' && tools === undefined)
      return 'tool_choice may only be specified while providing tools.';
    if (choice.type === 'tool' && !names.has(String(choice.name)))
      return `tool_choice: Tool '${String(choice.name)}' not found in provided tools`;
    if (choice.type === 'none' && choice.disable_parallel_tool_use !== undefined)
      return 'tool_choice.none.disable_parallel_tool_use: Extra inputs are not permitted';
  }
  const messages = Array.isArray(body.messages) ? body.messages : [];
  let pendingToolUse: string[] = [];
  for (const [i, m] of messages.entries()) {
    if (!isObj(m)) continue;
    const blocks = Array.isArray(m.content) ? m.content.filter(isObj) : [];
    if (m.role === 'user') {
      const results = blocks.filter((b) => b.type === 'tool_result');
      const firstOther = blocks.findIndex((b) => b.type !== 'tool_result');
      if (results.length > 0 && firstOther !== -1 && firstOther < blocks.lastIndexOf(results[results.length - 1]!))
        return `messages.${i}: tool_result blocks must come first in the content`;
      for (const r of results) {
        if (!pendingToolUse.includes(String(r.tool_use_id)))
          return `messages.${i}.content: unexpected \`tool_use_id\` found in \`tool_result\` blocks: ${String(r.tool_use_id)}. Each \`tool_result\` block must have a corresponding \`tool_use\` block in the previous message.`;
      }
      const answered = new Set(results.map((r) => String(r.tool_use_id)));
      const missing = pendingToolUse.filter((id) => !answered.has(id));
      if (missing.length > 0)
        return `messages.${i}: \`tool_use\` ids were found without \`tool_result\` blocks immediately after: ${missing.join(', ')}`;
      pendingToolUse = [];
    } else {
      if (pendingToolUse.length > 0)
        return `messages.${i}: \`tool_use\` ids were found without \`tool_result\` blocks immediately after: ${pendingToolUse.join(', ')}`;
      for (const b of blocks.filter((x) => x.type === 'tool_use')) {
        if (typeof b.id !== 'string' || typeof b.name !== 'string' || !isObj(b.input))
          return `messages.${i}.content: tool_use blocks need id, name and an input object`;
      }
      pendingToolUse = blocks.filter((b) => b.type === 'tool_use').map((b) => String(b.id));
    }
  }
  const oc = body.output_config;
  if (oc !== undefined) {
    const format = isObj(oc) ? oc.format : undefined;
    if (!isObj(format) || format.type !== 'json_schema' || !isObj(format.schema))
      return 'output_config.format: expected {"type":"json_schema","schema":{...}}';
  }
  return null;
}

function describeMessage(m: Record<string, unknown>): NormalizedMessage[] {
  const role = m.role === 'assistant' ? 'assistant' : 'user';
  if (!Array.isArray(m.content)) return [{ role, content: textOf(m.content) }];
  const blocks = m.content.filter(isObj);
  const text = blocks
    .filter((b) => b.type === 'text')
    .map((b) => String(b.text))
    .join('');
  if (role === 'assistant') {
    const calls = blocks
      .filter((b) => b.type === 'tool_use')
      .map((b) => ({ id: String(b.id), name: String(b.name), arguments: b.input }));
    return [{ role, content: text, ...(calls.length > 0 ? { toolCalls: calls } : {}) }];
  }
  const results: NormalizedMessage[] = blocks
    .filter((b) => b.type === 'tool_result')
    .map((b) => ({ role: 'tool', content: textOf(b.content), toolCallId: String(b.tool_use_id) }));
  return text === '' && results.length > 0 ? results : [...results, { role, content: text }];
}

/** The answer's tool_use blocks (ids stable within one answer). */
const toolUses = (reply: ResolvedReply, ids: string[]) =>
  reply.toolCalls.map((c, i) => ({ type: 'tool_use', id: ids[i], name: c.name, input: c.arguments }));

function textOf(content: unknown): string {
  if (typeof content === 'string') return content;
  if (Array.isArray(content))
    return content.map((b) => (isObj(b) && typeof b.text === 'string' ? b.text : '')).join('');
  return '';
}

export const anthropicDialect: VendorDialect = {
  name: 'anthropic',
  basePath: '',
  stopReason: 'end_turn',
  toolStopReason: 'tool_use',
  streamHeaders: {
    'content-type': 'text/event-stream; charset=utf-8',
    'cache-control': 'no-cache',
    'request-id': `req_${fakeId()}`,
  },
  route(method, url, body) {
    if (method !== 'POST' || url.pathname !== '/v1/messages') return null;
    const b = isObj(body) ? body : {};
    return { stream: b.stream === true, model: typeof b.model === 'string' ? b.model : '' };
  },
  apiKeyOf: (headers) => (typeof headers['x-api-key'] === 'string' ? headers['x-api-key'] : undefined),
  unauthorized: () => anthropicError(401, 'authentication_error', 'invalid x-api-key'),
  validate(headers, body) {
    if (typeof headers['anthropic-version'] !== 'string')
      return anthropicError(400, 'invalid_request_error', 'anthropic-version: header is required');
    if (!isObj(body)) return anthropicError(400, 'invalid_request_error', 'Invalid JSON');
    if (typeof body.max_tokens !== 'number')
      return anthropicError(400, 'invalid_request_error', 'max_tokens: Field required');
    if (!Array.isArray(body.messages) || body.messages.length === 0)
      return anthropicError(400, 'invalid_request_error', 'messages: Field required');
    for (const [i, m] of body.messages.entries()) {
      if (!isObj(m) || (m.role !== 'user' && m.role !== 'assistant')) {
        return anthropicError(
          400,
          'invalid_request_error',
          `messages.${i}.role: Input should be 'user' or 'assistant'`,
        );
      }
    }
    if (typeof body.temperature === 'number' && (body.temperature < 0 || body.temperature > 1)) {
      return anthropicError(400, 'invalid_request_error', 'temperature: range: 0..1');
    }
    for (const field of [
      'seed',
      'presence_penalty',
      'frequency_penalty',
      'stop',
      'n',
      'user',
      'response_format',
      'parallel_tool_calls',
    ]) {
      if (field in body)
        return anthropicError(400, 'invalid_request_error', `${field}: Extra inputs are not permitted`);
    }
    const problem = toolProblem(body);
    return problem === null ? null : anthropicError(400, 'invalid_request_error', problem);
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
      content: [
        ...(reply.text !== '' || reply.toolCalls.length === 0 ? [{ type: 'text', text: reply.text }] : []),
        ...toolUses(
          reply,
          reply.toolCalls.map(() => `toolu_${fakeId()}`),
        ),
      ],
      stop_reason: reply.finishReason,
      stop_sequence: null,
      usage: {
        input_tokens: reply.usage.prompt,
        cache_creation_input_tokens: 0,
        cache_read_input_tokens: 0,
        output_tokens: reply.usage.completion,
      },
    };
  },
  stream(reply, model) {
    const hasText = reply.text !== '' || reply.toolCalls.length === 0;
    return {
      head: [
        namedEvent('message_start', {
          message: {
            id: `msg_${fakeId()}`,
            type: 'message',
            role: 'assistant',
            model,
            content: [],
            stop_reason: null,
            stop_sequence: null,
            usage: {
              input_tokens: reply.usage.prompt,
              cache_creation_input_tokens: 0,
              cache_read_input_tokens: 0,
              output_tokens: 1,
            },
          },
        }),
        ...(hasText
          ? [namedEvent('content_block_start', { index: 0, content_block: { type: 'text', text: '' } })]
          : []),
        namedEvent('ping', {}),
      ],
      pieces: reply.pieces.map((p) =>
        namedEvent('content_block_delta', { index: 0, delta: { type: 'text_delta', text: p } }),
      ),
      tail: [
        ...(hasText ? [namedEvent('content_block_stop', { index: 0 })] : []),
        ...reply.toolCalls.flatMap((c, i) => {
          const index = i + (hasText ? 1 : 0);
          return [
            namedEvent('content_block_start', {
              index,
              content_block: { type: 'tool_use', id: `toolu_${fakeId()}`, name: c.name, input: {} },
            }),
            ...c.pieces.map((p) =>
              namedEvent('content_block_delta', { index, delta: { type: 'input_json_delta', partial_json: p } }),
            ),
            namedEvent('content_block_stop', { index }),
          ];
        }),
        namedEvent('message_delta', {
          delta: { stop_reason: reply.finishReason, stop_sequence: null },
          usage: { output_tokens: reply.usage.completion },
        }),
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
      messages: messages.flatMap(describeMessage),
      temperature: num(b.temperature),
      topP: num(b.top_p),
      maxTokens: num(b.max_tokens),
      stop: Array.isArray(b.stop_sequences) ? b.stop_sequences.map(String) : undefined,
      seed: undefined,
      tools: Array.isArray(b.tools)
        ? b.tools.filter(isObj).map((t) => ({
            name: String(t.name),
            description: typeof t.description === 'string' ? t.description : undefined,
            parameters: t.input_schema,
          }))
        : undefined,
      toolChoice: !isObj(b.tool_choice)
        ? undefined
        : b.tool_choice.type === 'any'
          ? 'required'
          : b.tool_choice.type === 'tool'
            ? { name: String(b.tool_choice.name) }
            : (b.tool_choice.type as 'auto' | 'none'),
      parallelToolCalls:
        isObj(b.tool_choice) && b.tool_choice.type !== 'none'
          ? b.tool_choice.disable_parallel_tool_use !== true
          : undefined,
      responseFormat:
        isObj(b.output_config) && isObj(b.output_config.format)
          ? { type: 'json_schema', schema: b.output_config.format.schema }
          : undefined,
    };
  },
};
