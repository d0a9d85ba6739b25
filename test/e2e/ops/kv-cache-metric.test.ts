import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { postChat } from '../../helpers/chat-request.ts';
import { type HearthProcess, type ServeSettings } from '../../helpers/hearth-process.ts';
import { serveNeverStopping } from '../../helpers/served-model.ts';
import { nativeAddonAvailable } from '../../../src/worker/native-slot-engine.ts';

/**
 * hearth_kv_cache_usage_ratio (issue #25 item 6, the Gateway API Inference Extension's KV-cache utilisation): the
 * cells the running requests' sequences hold over the context's cells, read from the native loop. 0 when idle
 * (an idle slot's reusable prefix counts as free), above 0 while a generation runs, back to 0 once it ended.
 * The gauge is sampled (each worker reports every 250 ms while it runs jobs): the generation here runs for seconds
 * on the tiny model until the test aborts it, many samples long.
 */
const addon = nativeAddonAvailable();
const MODEL = 'local/kv-gauge';
/**
 * The native loop, 16,384 cells a slot (the bound on one request's share below), generations up to 16,000 tokens:
 * the generation runs until the test aborts it (4,000 tokens, about 2 s, were close to the polls' reach under load).
 */
const CONTEXT = 16_384;
const SETTINGS: ServeSettings = {
  engine: 'native',
  threads: 1,
  slots: 2,
  'context-size': CONTEXT,
  'max-tokens': 16_000,
};
let hearth: HearthProcess;

async function ratio(): Promise<number | undefined> {
  const text = await (await fetch(`${hearth.baseUrl}/metrics`)).text();
  const m = /^hearth_kv_cache_usage_ratio\{[^}]*\} (\S+)$/m.exec(text);
  return m ? Number(m[1]) : undefined;
}

describe.skipIf(!addon.ok)('KV-cache utilisation gauge (native engine)', () => {
  beforeAll(async () => {
    hearth = await serveNeverStopping(MODEL, SETTINGS, {}, CONTEXT);
  }, 60_000);
  afterAll(() => hearth?.stop());

  it('is 0 when idle, between 0 and 1 while a request runs, and 0 again after it', async () => {
    await expect.poll(ratio, { timeout: 10_000 }).toBe(0);
    const controller = new AbortController();
    const running = postChat(
      hearth,
      {
        model: MODEL,
        messages: [{ role: 'user', content: 'a prompt of some length '.repeat(8) }],
        max_tokens: 16_000,
        stream: true,
      },
      { signal: controller.signal },
    );
    const response = await running;
    expect(response.status).toBe(200);
    const reader = response.body!.getReader();
    await reader.read(); // the first event: the job holds its slot
    let seen = 0;
    await expect.poll(async () => (seen = (await ratio()) ?? 0), { timeout: 10_000 }).toBeGreaterThan(0);
    expect(seen).toBeLessThanOrEqual(1);
    // One request holds at most its slot's cells, out of 2 slots'.
    expect(seen).toBeLessThanOrEqual(0.5);
    controller.abort();
    await reader.cancel().catch(() => {});
    await expect.poll(ratio, { timeout: 10_000 }).toBe(0);
  }, 60_000);
});
