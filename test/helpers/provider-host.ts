import type { ProviderName } from '../../src/providers/chat-provider.ts';
import { type FakeUpstream, providerBaseUrls } from '../fakes/index.ts';
import { instantModelArgs, type ServeSettings } from './hearth-process.ts';
import { tinyChatModel } from './test-model.ts';

/**
 * `hearth serve` arguments for a test of the project (provider) routes: the tiny chat model on one instant-engine
 * worker with one slot (the shared model is beside the point), each provider in `fakes` sent to its fake, no
 * retries (each upstream call the test scripts happens once), then `settings`.
 */
export async function providerHostArgs(
  fakes: Partial<Record<ProviderName, FakeUpstream>>,
  settings: ServeSettings = {},
): Promise<string[]> {
  return instantModelArgs(await tinyChatModel(), {
    workers: 1,
    slots: 1,
    ...providerBaseUrls(fakes),
    'provider-max-retries': 0,
    ...settings,
  });
}
