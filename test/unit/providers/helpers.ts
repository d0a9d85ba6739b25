import { type ChatRequest, plainChatFields } from '../../../src/protocol/chat-request.ts';
import { resolveProviderOptions, type ProviderCall, type ProviderName } from '../../../src/providers/chat-provider.ts';
import type { SseEvent } from '../../../src/providers/sse-parser.ts';

export const KEY = 'test-key-0123456789';

export function makeCall(request: Partial<ChatRequest> = {}, overrides: Partial<ProviderCall> = {}): ProviderCall {
  return {
    request: {
      ...plainChatFields(),
      model: 'ignored',
      messages: [{ role: 'user', content: 'Hi' }],
      stream: false,
      includeUsage: false,
      stop: [],
      ...request,
    },
    model: 'the-model',
    apiKey: KEY,
    signal: new AbortController().signal,
    ...overrides,
  };
}

export const optionsFor = (name: ProviderName) =>
  resolveProviderOptions(name, { baseUrl: 'http://upstream.test/base/' });
export const bodyOf = (request: { body: string }) => JSON.parse(request.body) as Record<string, unknown>;
export const ev = (data: unknown, event = 'message'): SseEvent => ({
  event,
  data: typeof data === 'string' ? data : JSON.stringify(data),
});
