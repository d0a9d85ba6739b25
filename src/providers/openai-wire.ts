import { upstreamBadResponse } from '../errors/errors.ts';
import type { FinishReason } from '../protocol/openai-types.ts';
import type { ProviderCall } from './chat-provider.ts';
import type { SseEvent } from './sse-parser.ts';
import type { UpstreamRequest } from './upstream-fetch.ts';
import { scrubSecrets } from './upstream-errors.ts';
import { count, isObject, parseUpstreamJson, type UsageCounts, type VendorReply, type VendorStreamEvent } from './vendor-adapter.ts';

/**
 * The chat-completions wire format shared by OpenAI and Mistral (same JSON bodies, `data:` SSE events
 * ending with `data: [DONE]`). Each vendor supplies its own finish-reason map and parameter names.
 */

/** Maps a vendor's finish_reason string (null means not finished and is never passed). May throw (Mistral 'error'). */
export type FinishMap = (reason: string, provider: string) => FinishReason;

export function chatCompletionMessages(call: ProviderCall): Array<{ role: string; content: string }> {
  return call.request.messages.map((m) => ({ role: m.role, content: m.content }));
}

/** Message / delta content: a string, null, or (Mistral, newer OpenAI) an array of typed parts of which text parts count. */
export function contentText(content: unknown): string {
  if (typeof content === 'string') return content;
  if (Array.isArray(content)) {
    return content.map((part) => (isObject(part) && part.type === 'text' && typeof part.text === 'string' ? part.text : '')).join('');
  }
  return '';
}

export function chatCompletionUsage(usage: unknown): UsageCounts | undefined {
  if (!isObject(usage)) return undefined;
  const details = isObject(usage.prompt_tokens_details) ? usage.prompt_tokens_details : undefined;
  return { promptTokens: count(usage.prompt_tokens), completionTokens: count(usage.completion_tokens), cachedTokens: count(details?.cached_tokens) };
}

export function parseChatCompletionReply(body: unknown, provider: string, mapFinish: FinishMap): VendorReply {
  const choice = isObject(body) && Array.isArray(body.choices) ? body.choices[0] : undefined;
  if (!isObject(choice)) throw upstreamBadResponse(provider, 'the answer has no choices');
  const message = isObject(choice.message) ? choice.message : {};
  const reason = typeof choice.finish_reason === 'string' ? mapFinish(choice.finish_reason, provider) : 'stop';
  return { text: contentText(message.content), finishReason: reason, usage: chatCompletionUsage((body as Record<string, unknown>).usage) };
}

export function parseChatCompletionEvent(event: SseEvent, provider: string, mapFinish: FinishMap): VendorStreamEvent[] {
  const data = event.data.trim();
  if (data === '[DONE]') return [{ type: 'end' }];
  if (data === '') return [];
  const chunk = parseUpstreamJson(data, provider);
  if (!isObject(chunk)) throw upstreamBadResponse(provider, 'a stream event is not a JSON object');
  if ((chunk.error !== undefined && chunk.error !== null) || chunk.object === 'error') {
    // OpenAI: {"error":{...}}; Mistral: {"object":"error","message":...}
    const source = isObject(chunk.error) ? chunk.error : chunk;
    const message = typeof source.message === 'string' ? source.message : 'unknown error';
    throw upstreamBadResponse(provider, `error in the stream: ${scrubSecrets(message, [])}`, 'stream_error');
  }
  const out: VendorStreamEvent[] = [];
  const choice = Array.isArray(chunk.choices) ? chunk.choices[0] : undefined;
  if (isObject(choice)) {
    const delta = isObject(choice.delta) ? choice.delta : {};
    const text = contentText(delta.content);
    if (text !== '') out.push({ type: 'text', text });
    if (typeof choice.finish_reason === 'string') out.push({ type: 'finish', reason: mapFinish(choice.finish_reason, provider) });
  }
  const usage = chatCompletionUsage(chunk.usage);
  if (usage !== undefined) out.push({ type: 'usage', usage });
  return out;
}

/** POST {baseUrl}/chat/completions with a Bearer key: the request shape OpenAI and Mistral share. */
export function chatCompletionsRequest(baseUrl: string, apiKey: string, body: unknown, stream: boolean): UpstreamRequest {
  return {
    url: `${baseUrl}/chat/completions`,
    headers: {
      authorization: `Bearer ${apiKey}`,
      'content-type': 'application/json',
      accept: stream ? 'text/event-stream' : 'application/json',
    },
    body: JSON.stringify(body),
  };
}
