import { describe, expect, it } from 'vitest';
import {
  DEFAULT_PROVIDER_BASE_URLS,
  DEFAULT_PROVIDER_OPTIONS,
  PROVIDER_NAMES,
  resolveProviderOptions,
} from '../../../src/providers/chat-provider.ts';
import { createProvider } from '../../../src/providers/create-provider.ts';

describe('provider options', () => {
  it('defaults to the real vendor URL and strips a trailing slash from a configured one', () => {
    for (const name of PROVIDER_NAMES) {
      expect(resolveProviderOptions(name).baseUrl).toBe(DEFAULT_PROVIDER_BASE_URLS[name]);
      expect(createProvider(name).name).toBe(name);
    }
    expect(resolveProviderOptions('openai', { baseUrl: 'http://127.0.0.1:9/v1/' }).baseUrl).toBe(
      'http://127.0.0.1:9/v1',
    );
    expect(resolveProviderOptions('openai', { timeoutMs: undefined }).timeoutMs).toBe(
      DEFAULT_PROVIDER_OPTIONS.timeoutMs,
    );
  });

  it('rejects bad options at construction, naming them', () => {
    expect(() => resolveProviderOptions('openai', { baseUrl: 'ftp://x' })).toThrow(/baseUrl/);
    expect(() => resolveProviderOptions('openai', { baseUrl: 'not a url' })).toThrow(/baseUrl/);
    expect(() => resolveProviderOptions('gemini', { timeoutMs: 0 })).toThrow(/timeoutMs/);
    expect(() => resolveProviderOptions('mistral', { maxRetries: 1.5 })).toThrow(/maxRetries/);
    expect(() => resolveProviderOptions('anthropic', { retryBaseDelayMs: -1 })).toThrow(/retryBaseDelayMs/);
    expect(() => createProvider('cohere' as never)).toThrow(/unknown provider/);
  });
});
