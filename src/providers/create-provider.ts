import { anthropicAdapter } from './anthropic.ts';
import { resolveProviderOptions, type ChatProvider, type ProviderName, type ProviderOptions } from './chat-provider.ts';
import { geminiAdapter } from './gemini.ts';
import { HttpChatProvider } from './http-chat-provider.ts';
import { mistralAdapter } from './mistral.ts';
import { openAiAdapter } from './openai.ts';
import type { VendorAdapter } from './vendor-adapter.ts';

const ADAPTERS: Readonly<Record<ProviderName, VendorAdapter>> = Object.freeze({
  openai: openAiAdapter,
  anthropic: anthropicAdapter,
  gemini: geminiAdapter,
  mistral: mistralAdapter,
});

/**
 * A provider for `name` with `options` over DEFAULT_PROVIDER_OPTIONS (validated here; a bad option
 * throws a TypeError at boot). Providers hold no per-call state: create one per (name, options) at
 * start-up and share it across requests and projects.
 */
export function createProvider(name: ProviderName, options: Partial<ProviderOptions> = {}): ChatProvider {
  const adapter = ADAPTERS[name];
  if (adapter === undefined) throw new TypeError(`unknown provider '${String(name)}'`);
  return new HttpChatProvider(adapter, resolveProviderOptions(name, options));
}
