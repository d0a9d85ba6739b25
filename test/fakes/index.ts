import type { ProviderName } from '../../src/providers/chat-provider.ts';
import { anthropicDialect } from './anthropic-fake.ts';
import type { VendorDialect } from './dialect.ts';
import { FakeUpstream, type FakeUpstreamOptions } from './fake-upstream.ts';
import { geminiDialect } from './gemini-fake.ts';
import { mistralDialect } from './mistral-fake.ts';
import { openAiDialect } from './openai-fake.ts';

export * from './dialect.ts';
export * from './fake-upstream.ts';

/** Each provider's dialect, the only vendor-specific part of its fake. */
export const VENDOR_DIALECTS: Record<ProviderName, VendorDialect> = {
  openai: openAiDialect,
  anthropic: anthropicDialect,
  gemini: geminiDialect,
  mistral: mistralDialect,
};

/** A local fake of `name`'s API, listening on 127.0.0.1; close() it in afterAll. */
export const startFakeUpstream = (name: ProviderName, options?: FakeUpstreamOptions): Promise<FakeUpstream> =>
  FakeUpstream.start(VENDOR_DIALECTS[name], options);

/** `hearth serve` settings (see serveFlags) that send each provider in `fakes` to its fake: `<provider>-base-url`. */
export function providerBaseUrls(fakes: Partial<Record<ProviderName, FakeUpstream>>): Record<string, string> {
  return Object.fromEntries(Object.entries(fakes).map(([provider, fake]) => [`${provider}-base-url`, fake.baseUrl]));
}
