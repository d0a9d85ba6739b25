import { type ChatProvider, PROVIDER_NAMES, type ProviderName } from './chat-provider.ts';
import { createProvider } from './create-provider.ts';

/** The settings the shared providers are made from (the `--*-base-url` and `--provider-*` settings of the config). */
export interface ProviderSetSettings {
  openaiBaseUrl: string;
  anthropicBaseUrl: string;
  geminiBaseUrl: string;
  mistralBaseUrl: string;
  providerTimeoutMs: number;
  providerDeadlineMs: number;
  providerMaxRetries: number;
}

/**
 * One shared provider per vendor, pointed at the configured base URLs, with the configured time-out, deadline and
 * retries. Made once at boot (main.ts), where a bad option fails the start; the providers live as long as the process.
 */
export function createProviders(s: ProviderSetSettings): Record<ProviderName, ChatProvider> {
  const baseUrls: Record<ProviderName, string> = {
    openai: s.openaiBaseUrl,
    anthropic: s.anthropicBaseUrl,
    gemini: s.geminiBaseUrl,
    mistral: s.mistralBaseUrl,
  };
  const entries = PROVIDER_NAMES.map(
    (name) =>
      [
        name,
        createProvider(name, {
          baseUrl: baseUrls[name],
          timeoutMs: s.providerTimeoutMs,
          idleTimeoutMs: s.providerTimeoutMs,
          deadlineMs: s.providerDeadlineMs,
          maxRetries: s.providerMaxRetries,
        }),
      ] as const,
  );
  return Object.fromEntries(entries) as Record<ProviderName, ChatProvider>;
}
