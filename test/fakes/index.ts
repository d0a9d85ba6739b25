import type { ProviderName } from '../../src/providers/chat-provider.ts';
import { startAnthropicFake } from './anthropic-fake.ts';
import type { FakeUpstream, FakeUpstreamOptions } from './fake-upstream.ts';
import { startGeminiFake } from './gemini-fake.ts';
import { startMistralFake } from './mistral-fake.ts';
import { startOpenAiFake } from './openai-fake.ts';

export * from './fake-upstream.ts';
export { anthropicDialect, startAnthropicFake } from './anthropic-fake.ts';
export { geminiDialect, startGeminiFake } from './gemini-fake.ts';
export { mistralDialect, startMistralFake } from './mistral-fake.ts';
export { openAiDialect, startOpenAiFake } from './openai-fake.ts';

/** A local fake of `name`'s API, listening on 127.0.0.1; close() it in afterAll. */
export function startFakeUpstream(name: ProviderName, options?: FakeUpstreamOptions): Promise<FakeUpstream> {
  switch (name) {
    case 'openai':
      return startOpenAiFake(options);
    case 'anthropic':
      return startAnthropicFake(options);
    case 'gemini':
      return startGeminiFake(options);
    case 'mistral':
      return startMistralFake(options);
  }
}

/** `hearth serve` settings (see serveFlags) that send each provider in `fakes` to its fake: `<provider>-base-url`. */
export function providerBaseUrls(fakes: Partial<Record<ProviderName, FakeUpstream>>): Record<string, string> {
  return Object.fromEntries(Object.entries(fakes).map(([provider, fake]) => [`${provider}-base-url`, fake.baseUrl]));
}
