import { invalidRequest, unsupportedParameter, upstreamBadResponse, upstreamError } from '../errors/errors.ts';
import type { ChatMessage } from '../protocol/chat-request.ts';
import type { FinishReason } from '../protocol/openai-types.ts';
import type { ProviderCall, ResolvedProviderOptions } from './chat-provider.ts';
import type { SseEvent } from './sse-parser.ts';
import type { UpstreamRequest } from './upstream-fetch.ts';
import { scrubSecrets } from './upstream-errors.ts';
import {
  compact, count, effectiveTemperature, isObject, parseUpstreamJson,
  type UsageCounts, type VendorAdapter, type VendorReply, type VendorStreamEvent,
} from './vendor-adapter.ts';

/**
 * Anthropic Messages API: POST {base}/v1/messages with `x-api-key` and `anthropic-version` headers.
 * Translation (README.md "Upstream providers"):
 *  - system messages are lifted into `system` (several are joined with a blank line, in order);
 *    consecutive messages of the same role are merged (joined with a blank line);
 *  - `max_tokens` is required by Anthropic: request.maxTokens, else options.anthropicDefaultMaxTokens (4096);
 *  - temperature is clamped to Anthropic's range 0..1 (OpenAI's is 0..2): 1.5 is sent as 1;
 *  - stop -> `stop_sequences`; user -> `metadata.user_id`;
 *  - seed and non-zero presence/frequency penalties have no Anthropic equivalent: 400 naming the field;
 *  - stop_reason end_turn / stop_sequence / tool_use / refusal -> stop; max_tokens and
 *    model_context_window_exceeded -> length;
 *  - usage: prompt_tokens = input_tokens + cache_creation_input_tokens + cache_read_input_tokens,
 *    cached_tokens = cache_read_input_tokens, completion_tokens = output_tokens.
 */
export const ANTHROPIC_MAX_TEMPERATURE = 1;

type AnthropicMessage = { role: 'user' | 'assistant'; content: string };

export function toAnthropicMessages(messages: readonly ChatMessage[]): { system: string | undefined; messages: AnthropicMessage[] } {
  const system: string[] = [];
  const out: AnthropicMessage[] = [];
  for (const m of messages) {
    if (m.role === 'system') {
      system.push(m.content);
      continue;
    }
    const last = out[out.length - 1];
    const role = m.role === 'assistant' ? 'assistant' : 'user';
    if (last !== undefined && last.role === role) last.content = `${last.content}\n\n${m.content}`;
    else out.push({ role, content: m.content });
  }
  if (out.length === 0) {
    throw invalidRequest("Provider anthropic needs at least one user or assistant message; 'messages' has only system messages", 'messages', 'invalid_value');
  }
  return { system: system.length > 0 ? system.join('\n\n') : undefined, messages: out };
}

export function anthropicFinishReason(reason: string): FinishReason {
  return reason === 'max_tokens' || reason === 'model_context_window_exceeded' ? 'length' : 'stop';
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

export function buildAnthropicRequest(call: ProviderCall, stream: boolean, options: ResolvedProviderOptions): UpstreamRequest {
  const r = call.request;
  if (r.seed !== undefined) throw unsupportedParameter('seed', 'is not supported by provider anthropic');
  if (r.presencePenalty !== undefined && r.presencePenalty !== 0) throw unsupportedParameter('presence_penalty', 'is not supported by provider anthropic');
  if (r.frequencyPenalty !== undefined && r.frequencyPenalty !== 0) throw unsupportedParameter('frequency_penalty', 'is not supported by provider anthropic');
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

export function parseAnthropicReply(body: unknown): VendorReply {
  if (!isObject(body) || !Array.isArray(body.content)) throw upstreamBadResponse('anthropic', 'the answer has no content');
  const text = body.content.map((block) => (isObject(block) && block.type === 'text' && typeof block.text === 'string' ? block.text : '')).join('');
  const reason = typeof body.stop_reason === 'string' ? anthropicFinishReason(body.stop_reason) : 'stop';
  return { text, finishReason: reason, usage: anthropicUsage(body.usage) };
}

/** Anthropic error types -> the HTTP status they stand for (for the code of a mid-stream `error` event). */
const ERROR_TYPE_STATUS: Record<string, number> = {
  invalid_request_error: 400, authentication_error: 401, permission_error: 403, not_found_error: 404,
  request_too_large: 413, rate_limit_error: 429, api_error: 500, overloaded_error: 529,
};

export function parseAnthropicEvent(event: SseEvent): VendorStreamEvent[] {
  if (event.data.trim() === '') return [];
  const data = parseUpstreamJson(event.data, 'anthropic');
  if (!isObject(data)) throw upstreamBadResponse('anthropic', 'a stream event is not a JSON object');
  const type = typeof data.type === 'string' ? data.type : event.event;
  switch (type) {
    case 'message_start': {
      const usage = anthropicUsage(isObject(data.message) ? data.message.usage : undefined);
      return usage ? [{ type: 'usage', usage }] : [];
    }
    case 'content_block_delta': {
      const delta = isObject(data.delta) ? data.delta : {};
      return delta.type === 'text_delta' && typeof delta.text === 'string' && delta.text !== '' ? [{ type: 'text', text: delta.text }] : [];
    }
    case 'message_delta': {
      const out: VendorStreamEvent[] = [];
      const delta = isObject(data.delta) ? data.delta : {};
      if (typeof delta.stop_reason === 'string') out.push({ type: 'finish', reason: anthropicFinishReason(delta.stop_reason) });
      const usage = anthropicUsage(data.usage);
      if (usage) out.push({ type: 'usage', usage });
      return out;
    }
    case 'message_stop':
      return [{ type: 'end' }];
    case 'error': {
      const err = isObject(data.error) ? data.error : {};
      const errType = typeof err.type === 'string' ? err.type : 'api_error';
      const message = typeof err.message === 'string' ? scrubSecrets(err.message, []) : errType;
      throw upstreamError('anthropic', ERROR_TYPE_STATUS[errType] ?? 500, `${errType}: ${message}`);
    }
    default:
      return []; // ping, content_block_start/stop, and event types added later (Anthropic's versioning policy)
  }
}

export const anthropicAdapter: VendorAdapter = {
  name: 'anthropic',
  buildRequest: buildAnthropicRequest,
  parseReply: parseAnthropicReply,
  parseStreamEvent: parseAnthropicEvent,
};
