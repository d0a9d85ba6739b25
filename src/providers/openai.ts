import type { ChatFinishReason } from '../protocol/chat-delta.ts';
import { chatCompletionsAdapter } from './openai-wire.ts';
import type { VendorAdapter } from './vendor-adapter.ts';

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

export const openAiAdapter: VendorAdapter = chatCompletionsAdapter(
  'openai',
  { maxTokensField: 'max_completion_tokens', seedField: 'seed', sendsUser: true, asksStreamUsage: true },
  openAiFinishReason,
);
