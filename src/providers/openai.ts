import type { ChatFinishReason } from '../protocol/chat-delta.ts';
import type { ProviderCall, ResolvedProviderOptions } from './chat-provider.ts';
import {
  chatCompletionMessages,
  chatCompletionsAdapter,
  chatCompletionsRequest,
  chatCompletionToolFields,
} from './openai-wire.ts';
import type { UpstreamRequest } from './upstream-fetch.ts';
import { compact, effectiveTemperature, type VendorAdapter } from './vendor-adapter.ts';

/**
 * OpenAI chat completions: POST {base}/chat/completions, `Authorization: Bearer <key>`, JSON or SSE.
 * Every request field Hearth honours maps one to one, except max tokens, sent as
 * `max_completion_tokens` (the current name; reasoning models reject `max_tokens`). Streams always ask
 * for `stream_options.include_usage` so usage is known; the usage chunk reaches the client only when
 * it asked for it. tools / tool_choice / parallel_tool_calls / response_format pass through
 * (chatCompletionToolFields); finish `tool_calls` (and the legacy `function_call`) -> tool_calls.
 */
export function openAiFinishReason(reason: string): ChatFinishReason {
  if (reason === 'length') return 'length';
  if (reason === 'tool_calls' || reason === 'function_call') return 'tool_calls';
  return 'stop'; // 'stop', 'content_filter'
}

export function buildOpenAiRequest(
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
    max_completion_tokens: r.maxTokens,
    stop: r.stop.length > 0 ? r.stop : undefined,
    seed: r.seed,
    presence_penalty: r.presencePenalty,
    frequency_penalty: r.frequencyPenalty,
    user: r.user,
    ...chatCompletionToolFields(r),
    stream: stream ? true : undefined,
    stream_options: stream ? { include_usage: true } : undefined,
  });
  return chatCompletionsRequest(options.baseUrl, call.apiKey, body, stream);
}

export const openAiAdapter: VendorAdapter = chatCompletionsAdapter('openai', buildOpenAiRequest, openAiFinishReason);
