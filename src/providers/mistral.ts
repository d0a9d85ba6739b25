import { upstreamBadResponse } from '../errors/errors.ts';
import type { ChatFinishReason } from '../protocol/chat-delta.ts';
import { chatCompletionsAdapter } from './openai-wire.ts';
import type { VendorAdapter } from './vendor-adapter.ts';

/**
 * Mistral chat completions: POST {base}/chat/completions, `Authorization: Bearer <key>`, JSON or SSE
 * (`data: [DONE]` at the end; usage arrives on the last chunk without asking). Differences from OpenAI:
 * `max_tokens`, `random_seed` instead of `seed`, no `user` (Mistral rejects unknown fields with 422, so
 * `user` is not sent), and finish reasons `model_length` (-> length) and `error` (-> 502). Tools,
 * tool_choice, parallel_tool_calls and response_format pass through as for OpenAI; Mistral streams each
 * tool call whole in one chunk.
 */
export function mistralFinishReason(reason: string, provider = 'mistral'): ChatFinishReason {
  if (reason === 'length' || reason === 'model_length') return 'length';
  if (reason === 'error')
    throw upstreamBadResponse(provider, 'generation failed (finish_reason "error")', 'generation_error');
  if (reason === 'tool_calls') return 'tool_calls';
  return 'stop';
}

export const mistralAdapter: VendorAdapter = chatCompletionsAdapter(
  'mistral',
  { maxTokensField: 'max_tokens', seedField: 'random_seed', sendsUser: false, asksStreamUsage: false },
  mistralFinishReason,
);
