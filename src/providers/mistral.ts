import { upstreamBadResponse } from '../errors/errors.ts';
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

export function buildMistralRequest(
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
    max_tokens: r.maxTokens,
    stop: r.stop.length > 0 ? r.stop : undefined,
    random_seed: r.seed,
    presence_penalty: r.presencePenalty,
    frequency_penalty: r.frequencyPenalty,
    ...chatCompletionToolFields(r),
    stream: stream ? true : undefined,
  });
  return chatCompletionsRequest(options.baseUrl, call.apiKey, body, stream);
}

export const mistralAdapter: VendorAdapter = chatCompletionsAdapter(
  'mistral',
  buildMistralRequest,
  mistralFinishReason,
);
