import { unsupportedParameter, upstreamBadResponse } from '../errors/errors.ts';
import type { ChatMessage, ChatRequest } from '../protocol/chat-request.ts';
import type { ChatFinishReason } from '../protocol/chat-delta.ts';
import type { ProviderCall, ResolvedProviderOptions } from './chat-provider.ts';
import type { SseEvent } from './sse-parser.ts';
import { argumentsObject, toolNameOf } from './tool-arguments.ts';
import type { UpstreamRequest } from './upstream-fetch.ts';
import { alternatingTurns } from './alternating-turns.ts';
import { compact, count, effectiveTemperature, isObject, parseUpstreamJson } from './vendor-adapter.ts';
import type { UsageCounts, VendorAdapter, VendorEvent } from './vendor-adapter.ts';

/**
 * Anthropic Messages API: POST {base}/v1/messages with `x-api-key` and `anthropic-version` headers.
 * Translation (README.md "Upstream providers"):
 *  - system messages are lifted into `system` (several are joined with a blank line, in order);
 *    consecutive messages of the same role are merged (joined with a blank line);
 *  - `max_tokens` is required by Anthropic: request.maxTokens, else options.anthropicDefaultMaxTokens (4096);
 *  - temperature is clamped to Anthropic's range 0..1 (OpenAI's is 0..2): 1.5 is sent as 1;
 *  - stop -> `stop_sequences`; user -> `metadata.user_id`;
 *  - seed and non-zero presence/frequency penalties have no Anthropic equivalent: 400 naming the field;
 *  - stop_reason end_turn / stop_sequence / refusal -> stop; tool_use -> tool_calls; max_tokens and
 *    model_context_window_exceeded -> length;
 *  - tools -> `tools` {name, description, input_schema}; tool_choice and parallel_tool_calls -> `tool_choice`
 *    (anthropicToolFields); an assistant's tool calls -> `tool_use` blocks (arguments parsed to `input`);
 *    `tool` messages -> `tool_result` blocks of a user message (first in it); replies' `tool_use` blocks and
 *    streamed `input_json_delta` fragments -> tool-call deltas; json_schema response_format -> `output_config.format`;
 *  - usage: prompt_tokens = input_tokens + cache_creation_input_tokens + cache_read_input_tokens,
 *    cached_tokens = cache_read_input_tokens, completion_tokens = output_tokens.
 */
export const ANTHROPIC_MAX_TEMPERATURE = 1;

type AnthropicBlock =
  | { type: 'text'; text: string }
  | { type: 'tool_use'; id: string; name: string; input: Record<string, unknown> }
  | { type: 'tool_result'; tool_use_id: string; content: string };
/** Plain text content stays a string (as before tools); a message with tool blocks carries a block list. */
type AnthropicMessage = { role: 'user' | 'assistant'; content: string | AnthropicBlock[] };

function blocksOf(m: ChatMessage, index: number, messages: readonly ChatMessage[]): AnthropicBlock[] {
  if (m.role === 'tool') {
    if (m.toolCallId === undefined || m.toolCallId === '') toolNameOf(messages, index, 'anthropic'); // throws the 400
    return [{ type: 'tool_result', tool_use_id: m.toolCallId ?? '', content: m.content }];
  }
  const blocks: AnthropicBlock[] = m.content === '' ? [] : [{ type: 'text', text: m.content }];
  (m.toolCalls ?? []).forEach((c, j) => {
    blocks.push({
      type: 'tool_use',
      id: c.id,
      name: c.name,
      input: argumentsObject(c.arguments, `messages[${index}].tool_calls[${j}].function.arguments`, 'anthropic'),
    });
  });
  return blocks;
}

/** Merges `add` into `into` (same role): text joined with a blank line; tool_result blocks first, as Anthropic requires. */
function merge(into: AnthropicMessage, add: AnthropicMessage): void {
  if (typeof into.content === 'string' && typeof add.content === 'string') {
    into.content = `${into.content}\n\n${add.content}`;
    return;
  }
  const asBlocks = (c: string | AnthropicBlock[]): AnthropicBlock[] =>
    typeof c === 'string' ? (c === '' ? [] : [{ type: 'text', text: c }]) : c;
  const all = [...asBlocks(into.content), ...asBlocks(add.content)];
  into.content = [...all.filter((b) => b.type === 'tool_result'), ...all.filter((b) => b.type !== 'tool_result')];
}

export function toAnthropicMessages(messages: readonly ChatMessage[]): {
  system: string | undefined;
  messages: AnthropicMessage[];
} {
  const { system, turns } = alternatingTurns(
    'anthropic',
    messages,
    (m, i): AnthropicMessage => {
      const plain = m.role !== 'tool' && (m.toolCalls === undefined || m.toolCalls.length === 0);
      return {
        role: m.role === 'assistant' ? 'assistant' : 'user',
        content: plain ? m.content : blocksOf(m, i, messages),
      };
    },
    merge,
  );
  return { system, messages: turns };
}

/**
 * `tools`, `tool_choice` (auto -> auto, required -> any, a name -> tool, none -> none;
 * parallel_tool_calls false -> disable_parallel_tool_use) and `output_config.format` for a json_schema
 * response_format. json_object has no Anthropic equivalent (its structured outputs need a schema): 400.
 */
export function anthropicToolFields(r: ChatRequest): Record<string, unknown> {
  const out: Record<string, unknown> = {};
  if (r.tools.length > 0) {
    out.tools = r.tools.map((t) => ({
      name: t.name,
      ...(t.description !== undefined ? { description: t.description } : {}),
      input_schema: t.parameters,
    }));
    const choice = r.toolChoice;
    const parallel = r.parallelToolCalls ? {} : { disable_parallel_tool_use: true };
    if (choice === 'none') out.tool_choice = { type: 'none' };
    else if (choice === 'auto') out.tool_choice = { type: 'auto', ...parallel };
    else if (choice === 'required') out.tool_choice = { type: 'any', ...parallel };
    else out.tool_choice = { type: 'tool', name: choice.name, ...parallel };
  }
  const rf = r.responseFormat;
  if (rf.type === 'json_object') {
    throw unsupportedParameter(
      'response_format',
      'json_object is not supported by provider anthropic (its structured outputs need a schema): use {"type":"json_schema"}',
    );
  }
  if (rf.type === 'json_schema') out.output_config = { format: { type: 'json_schema', schema: rf.schema } };
  return out;
}

export function anthropicFinishReason(reason: string): ChatFinishReason {
  if (reason === 'max_tokens' || reason === 'model_context_window_exceeded') return 'length';
  if (reason === 'tool_use') return 'tool_calls';
  return 'stop';
}

export function anthropicUsage(usage: unknown): UsageCounts | undefined {
  if (!isObject(usage)) return undefined;
  const input = count(usage.input_tokens);
  const cacheWrite = count(usage.cache_creation_input_tokens) ?? 0;
  const cacheRead = count(usage.cache_read_input_tokens);
  return {
    promptTokens: input === undefined ? undefined : input + cacheWrite + (cacheRead ?? 0),
    completionTokens: count(usage.output_tokens),
    cachedTokens: input === undefined ? undefined : cacheRead,
  };
}

export function buildAnthropicRequest(
  call: ProviderCall,
  stream: boolean,
  options: ResolvedProviderOptions,
): UpstreamRequest {
  const r = call.request;
  if (r.seed !== undefined) throw unsupportedParameter('seed', 'is not supported by provider anthropic');
  if (r.presencePenalty !== undefined && r.presencePenalty !== 0)
    throw unsupportedParameter('presence_penalty', 'is not supported by provider anthropic');
  if (r.frequencyPenalty !== undefined && r.frequencyPenalty !== 0)
    throw unsupportedParameter('frequency_penalty', 'is not supported by provider anthropic');
  const { system, messages } = toAnthropicMessages(r.messages);
  const temperature = effectiveTemperature(call);
  const body = compact({
    model: call.model,
    max_tokens: r.maxTokens ?? options.anthropicDefaultMaxTokens,
    system,
    messages,
    temperature: temperature === undefined ? undefined : Math.min(Math.max(temperature, 0), ANTHROPIC_MAX_TEMPERATURE),
    top_p: r.topP,
    stop_sequences: r.stop.length > 0 ? r.stop : undefined,
    metadata: r.user !== undefined ? { user_id: r.user } : undefined,
    ...anthropicToolFields(r),
    stream: stream ? true : undefined,
  });
  return {
    url: `${options.baseUrl}/v1/messages`,
    headers: {
      'x-api-key': call.apiKey,
      'anthropic-version': options.anthropicVersion,
      'content-type': 'application/json',
      accept: stream ? 'text/event-stream' : 'application/json',
    },
    body: JSON.stringify(body),
  };
}

export function parseAnthropicReply(body: unknown): VendorEvent[] {
  if (!isObject(body) || !Array.isArray(body.content))
    throw upstreamBadResponse('anthropic', 'the answer has no content');
  const out: VendorEvent[] = [];
  body.content.forEach((block, i) => {
    if (!isObject(block)) return;
    if (block.type === 'text' && typeof block.text === 'string') out.push({ type: 'text', text: block.text });
    else if (block.type === 'tool_use') {
      out.push({
        type: 'tool_call',
        key: i,
        id: str(block.id),
        name: str(block.name),
        arguments: JSON.stringify(isObject(block.input) ? block.input : {}),
      });
    }
  });
  out.push({
    type: 'finish',
    reason: typeof body.stop_reason === 'string' ? anthropicFinishReason(body.stop_reason) : 'stop',
  });
  const usage = anthropicUsage(body.usage);
  if (usage !== undefined) out.push({ type: 'usage', usage });
  return out;
}

const str = (v: unknown): string | undefined => (typeof v === 'string' && v !== '' ? v : undefined);

/** Anthropic error types -> the HTTP status they stand for (for the code of a mid-stream `error` event). */
const ERROR_TYPE_STATUS: Record<string, number> = {
  invalid_request_error: 400,
  authentication_error: 401,
  permission_error: 403,
  not_found_error: 404,
  request_too_large: 413,
  rate_limit_error: 429,
  api_error: 500,
  overloaded_error: 529,
};

export function parseAnthropicEvent(event: SseEvent): VendorEvent[] {
  if (event.data.trim() === '') return [];
  const data = parseUpstreamJson(event.data, 'anthropic');
  if (!isObject(data)) throw upstreamBadResponse('anthropic', 'a stream event is not a JSON object');
  const type = typeof data.type === 'string' ? data.type : event.event;
  switch (type) {
    case 'message_start': {
      const usage = anthropicUsage(isObject(data.message) ? data.message.usage : undefined);
      return usage ? [{ type: 'usage', usage }] : [];
    }
    case 'content_block_start': {
      const block = isObject(data.content_block) ? data.content_block : {};
      if (block.type !== 'tool_use') return [];
      // `input` is {} here; the arguments follow as input_json_delta fragments of the same block index.
      return [
        { type: 'tool_call', key: blockIndex(data.index), id: str(block.id), name: str(block.name), arguments: '' },
      ];
    }
    case 'content_block_delta': {
      const delta = isObject(data.delta) ? data.delta : {};
      if (delta.type === 'input_json_delta') {
        return typeof delta.partial_json === 'string' && delta.partial_json !== ''
          ? [{ type: 'tool_call', key: blockIndex(data.index), arguments: delta.partial_json }]
          : [];
      }
      return delta.type === 'text_delta' && typeof delta.text === 'string' && delta.text !== ''
        ? [{ type: 'text', text: delta.text }]
        : [];
    }
    case 'message_delta': {
      const out: VendorEvent[] = [];
      const delta = isObject(data.delta) ? data.delta : {};
      if (typeof delta.stop_reason === 'string')
        out.push({ type: 'finish', reason: anthropicFinishReason(delta.stop_reason) });
      const usage = anthropicUsage(data.usage);
      if (usage) out.push({ type: 'usage', usage });
      return out;
    }
    case 'message_stop':
      return [{ type: 'end' }];
    case 'error': {
      const err = isObject(data.error) ? data.error : {};
      const errType = typeof err.type === 'string' ? err.type : 'api_error';
      const message = typeof err.message === 'string' ? err.message : errType;
      return [{ type: 'error', status: ERROR_TYPE_STATUS[errType] ?? 500, message: `${errType}: ${message}` }];
    }
    default:
      return []; // ping, content_block_stop, and event types added later (Anthropic's versioning policy)
  }
}

/** A content block's index as the key of its tool call (a missing index keys all fragments together). */
const blockIndex = (v: unknown): number | string => (typeof v === 'number' ? v : 'block');

export const anthropicAdapter: VendorAdapter = {
  name: 'anthropic',
  buildRequest: buildAnthropicRequest,
  parseReply: parseAnthropicReply,
  parseStreamEvent: parseAnthropicEvent,
};
