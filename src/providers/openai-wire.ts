import { upstreamBadResponse } from '../errors/errors.ts';
import type { ChatFinishReason } from '../protocol/chat-delta.ts';
import type { ChatRequest } from '../protocol/chat-request.ts';
import type { ProviderCall, ResolvedProviderOptions } from './chat-provider.ts';
import type { SseEvent } from './sse-parser.ts';
import type { UpstreamRequest } from './upstream-fetch.ts';
import { compact, count, effectiveTemperature, isObject, parseUpstreamJson } from './vendor-adapter.ts';
import type { UsageCounts, VendorAdapter, VendorEvent } from './vendor-adapter.ts';

/**
 * The chat-completions wire format shared by OpenAI and Mistral (same JSON bodies, `data:` SSE events
 * ending with `data: [DONE]`). Each vendor supplies its own finish-reason map and parameter names.
 */

/** Maps a vendor's finish_reason string (null means not finished and is never passed). May throw (Mistral 'error'). */
export type FinishMap = (reason: string, provider: string) => ChatFinishReason;

/** Messages in the chat-completions shape: assistant tool calls as `tool_calls` (content null when empty), tool results as `tool` messages. */
export function chatCompletionMessages(call: ProviderCall): Array<Record<string, unknown>> {
  return call.request.messages.map((m) => {
    if (m.role === 'tool') return { role: 'tool', tool_call_id: m.toolCallId ?? '', content: m.content };
    if (m.role === 'assistant' && m.toolCalls !== undefined && m.toolCalls.length > 0) {
      return {
        role: 'assistant',
        content: m.content === '' ? null : m.content,
        tool_calls: m.toolCalls.map((c) => ({
          id: c.id,
          type: 'function',
          function: { name: c.name, arguments: c.arguments },
        })),
      };
    }
    return { role: m.role, content: m.content };
  });
}

/**
 * `tools`, `tool_choice`, `parallel_tool_calls` and `response_format` as OpenAI and Mistral both take them
 * (passed through; parallel_tool_calls only when false, the vendors' default being true). Nothing is sent
 * for a request without tools and with text output, so plain requests look exactly as before.
 */
export function chatCompletionToolFields(r: ChatRequest): Record<string, unknown> {
  const out: Record<string, unknown> = {};
  if (r.tools.length > 0) {
    out.tools = r.tools.map((t) => ({
      type: 'function',
      function: {
        name: t.name,
        ...(t.description !== undefined ? { description: t.description } : {}),
        parameters: t.parameters,
        ...(t.strict ? { strict: true } : {}),
      },
    }));
    out.tool_choice =
      typeof r.toolChoice === 'string' ? r.toolChoice : { type: 'function', function: { name: r.toolChoice.name } };
    if (!r.parallelToolCalls) out.parallel_tool_calls = false; // true is the default; some models reject the field itself
  }
  const rf = r.responseFormat;
  if (rf.type === 'json_object') out.response_format = { type: 'json_object' };
  else if (rf.type === 'json_schema')
    out.response_format = { type: 'json_schema', json_schema: { name: rf.name, schema: rf.schema, strict: rf.strict } };
  return out;
}

/** Message / delta content: a string, null, or (Mistral, newer OpenAI) an array of typed parts of which text parts count. */
export function contentText(content: unknown): string {
  if (typeof content === 'string') return content;
  if (Array.isArray(content)) {
    return content
      .map((part) => (isObject(part) && part.type === 'text' && typeof part.text === 'string' ? part.text : ''))
      .join('');
  }
  return '';
}

export function chatCompletionUsage(usage: unknown): UsageCounts | undefined {
  if (!isObject(usage)) return undefined;
  const details = isObject(usage.prompt_tokens_details) ? usage.prompt_tokens_details : undefined;
  return {
    promptTokens: count(usage.prompt_tokens),
    completionTokens: count(usage.completion_tokens),
    cachedTokens: count(details?.cached_tokens),
  };
}

/** `tool_calls` of a message or a delta -> tool_call events (key = the call's `index`, else its position). */
function toolCallEvents(raw: unknown): VendorEvent[] {
  if (!Array.isArray(raw)) return [];
  const out: VendorEvent[] = [];
  raw.forEach((call, position) => {
    if (!isObject(call)) return;
    const fn = isObject(call.function) ? call.function : {};
    const args = fn.arguments;
    out.push({
      type: 'tool_call',
      key: typeof call.index === 'number' ? call.index : position,
      id: typeof call.id === 'string' && call.id !== '' ? call.id : undefined,
      name: typeof fn.name === 'string' && fn.name !== '' ? fn.name : undefined,
      // Mistral may send arguments as an object; OpenAI always as JSON text.
      arguments: typeof args === 'string' ? args : isObject(args) ? JSON.stringify(args) : '',
    });
  });
  return out;
}

export function parseChatCompletionReply(body: unknown, provider: string, mapFinish: FinishMap): VendorEvent[] {
  const choice = isObject(body) && Array.isArray(body.choices) ? body.choices[0] : undefined;
  if (!isObject(choice)) throw upstreamBadResponse(provider, 'the answer has no choices');
  const message = isObject(choice.message) ? choice.message : {};
  // What no OpenAI-compatible server sends: a 502 naming it, not an empty 200.
  const content = message.content;
  if (content !== undefined && content !== null && typeof content !== 'string' && !Array.isArray(content))
    throw upstreamBadResponse(provider, "the answer's message content is neither text nor a list of parts");
  if (choice.finish_reason !== undefined && choice.finish_reason !== null && typeof choice.finish_reason !== 'string')
    throw upstreamBadResponse(provider, "the answer's finish_reason is not a string");
  const out: VendorEvent[] = [
    { type: 'text', text: contentText(message.content) },
    ...toolCallEvents(message.tool_calls),
  ];
  if (typeof choice.finish_reason === 'string')
    out.push({ type: 'finish', reason: mapFinish(choice.finish_reason, provider) });
  const usage = chatCompletionUsage((body as Record<string, unknown>).usage);
  if (usage !== undefined) out.push({ type: 'usage', usage });
  return out;
}

export function parseChatCompletionEvent(event: SseEvent, provider: string, mapFinish: FinishMap): VendorEvent[] {
  const data = event.data.trim();
  if (data === '[DONE]') return [{ type: 'end' }];
  if (data === '') return [];
  const chunk = parseUpstreamJson(data, provider);
  if (!isObject(chunk)) throw upstreamBadResponse(provider, 'a stream event is not a JSON object');
  if ((chunk.error !== undefined && chunk.error !== null) || chunk.object === 'error') {
    // OpenAI: {"error":{...}}; Mistral: {"object":"error","message":...}
    const source = isObject(chunk.error) ? chunk.error : chunk;
    return [{ type: 'error', message: typeof source.message === 'string' ? source.message : 'unknown error' }];
  }
  const out: VendorEvent[] = [];
  const choice = Array.isArray(chunk.choices) ? chunk.choices[0] : undefined;
  if (isObject(choice)) {
    const delta = isObject(choice.delta) ? choice.delta : {};
    const text = contentText(delta.content);
    if (text !== '') out.push({ type: 'text', text });
    out.push(...toolCallEvents(delta.tool_calls));
    if (typeof choice.finish_reason === 'string')
      out.push({ type: 'finish', reason: mapFinish(choice.finish_reason, provider) });
  }
  const usage = chatCompletionUsage(chunk.usage);
  if (usage !== undefined) out.push({ type: 'usage', usage });
  return out;
}

/** Where OpenAI's and Mistral's chat-completions requests differ: two field names, and two fields only OpenAI is sent. */
export interface ChatCompletionsDialect {
  maxTokensField: 'max_completion_tokens' | 'max_tokens';
  seedField: 'seed' | 'random_seed';
  /** Sends the request's `user` (Mistral rejects unknown fields with 422). */
  sendsUser: boolean;
  /** Asks a stream for its usage (`stream_options.include_usage`); a vendor that always sends it is not asked. */
  asksStreamUsage: boolean;
}

/**
 * POST {baseUrl}/chat/completions with a Bearer key, the body in the vendor's dialect: every request field Hearth
 * honours, tools included (chatCompletionToolFields); fields the request leaves unset are not sent.
 */
export function chatCompletionsRequest(
  dialect: ChatCompletionsDialect,
  call: ProviderCall,
  stream: boolean,
  options: ResolvedProviderOptions,
): UpstreamRequest {
  const r = call.request;
  const body = compact({
    model: call.model,
    messages: chatCompletionMessages(call),
    temperature: effectiveTemperature(call),
    top_p: r.topP,
    [dialect.maxTokensField]: r.maxTokens,
    stop: r.stop.length > 0 ? r.stop : undefined,
    [dialect.seedField]: r.seed,
    presence_penalty: r.presencePenalty,
    frequency_penalty: r.frequencyPenalty,
    user: dialect.sendsUser ? r.user : undefined,
    ...chatCompletionToolFields(r),
    stream: stream ? true : undefined,
    stream_options: stream && dialect.asksStreamUsage ? { include_usage: true } : undefined,
  });
  return {
    url: `${options.baseUrl}/chat/completions`,
    headers: {
      authorization: `Bearer ${call.apiKey}`,
      'content-type': 'application/json',
      accept: stream ? 'text/event-stream' : 'application/json',
    },
    body: JSON.stringify(body),
  };
}

/** The adapter of a vendor that speaks OpenAI's chat completions wire: its own request dialect and finish reasons. */
export function chatCompletionsAdapter(
  name: VendorAdapter['name'],
  dialect: ChatCompletionsDialect,
  mapFinish: FinishMap,
): VendorAdapter {
  return {
    name,
    buildRequest: (call, stream, options) => chatCompletionsRequest(dialect, call, stream, options),
    parseReply: (body: unknown): VendorEvent[] => parseChatCompletionReply(body, name, mapFinish),
    parseStreamEvent: (event: SseEvent): VendorEvent[] => parseChatCompletionEvent(event, name, mapFinish),
  };
}
