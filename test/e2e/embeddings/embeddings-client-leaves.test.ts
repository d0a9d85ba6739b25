import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { type HearthProcess, startHearthProcess, nativeModelArgs } from '../../helpers/hearth-process.ts';
import { postJson } from '../../helpers/held-stream.ts';
import { realTestModel } from '../../helpers/test-model.ts';
import { nativeAddonAvailable } from '../../../src/worker/native-slot-engine.ts';

/**
 * Embeddings and a client that leaves (contract "A client that leaves": a request, streamed or not, frees its slot
 * when its client closes), and a short embeddings request beside a long one. The long request is 2,048 inputs of
 * about 500 tokens: about a million tokens, over a minute of stories260K's embedding passes on any of our CPUs
 * (122,000 tokens took 14 s on a Zen 5), so a request that is gone within seconds of its client was cut, not done.
 * The worker embeds in calls of about one pass, taking the waiting requests' inputs in turn (input-embedder.ts).
 */
const model = realTestModel();
const addon = nativeAddonAvailable();
const MODEL = 'local/stories';
const LONG_INPUT = 'once upon a time there was a little '.repeat(60);

describe.skipIf(!model || !addon.ok)('embeddings whose client leaves (native engine, stories260K)', () => {
  let hearth: HearthProcess;

  beforeAll(async () => {
    hearth = await startHearthProcess({
      args: nativeModelArgs(model!, MODEL, { slots: 2, 'context-size': 1024, 'body-limit-bytes': 16 << 20 }),
    });
    await hearth.waitReady();
  }, 60_000);

  afterAll(async () => {
    await hearth?.stop();
  });

  async function running(): Promise<number> {
    const text = await (await fetch(`${hearth.baseUrl}/metrics`)).text();
    return text
      .split('\n')
      .filter((l) => l.startsWith('hearth_num_requests_running{'))
      .reduce((sum, l) => sum + Number(l.split(' ').pop()), 0);
  }

  const embed = (input: string | string[]) =>
    fetch(`${hearth.baseUrl}/api/inference/v1/embeddings`, {
      method: 'POST',
      headers: { authorization: `Bearer ${hearth.key}`, 'content-type': 'application/json' },
      body: JSON.stringify({ model: MODEL, input }),
    });

  it('a short request is answered while a long one runs, and the long one is cut once its client leaves', async () => {
    const long = postJson(`${hearth.baseUrl}/api/inference/v1/embeddings`, hearth.key, {
      model: MODEL,
      input: Array.from({ length: 2048 }, () => LONG_INPUT),
    });
    let longAnswered = false;
    long.on('response', () => (longAnswered = true));
    long.on('error', () => {});
    await expect.poll(running, { timeout: 30_000, interval: 50 }).toBe(1);

    const short = await embed('hello');
    expect(short.status).toBe(200);
    const body = (await short.json()) as { data: Array<{ embedding: number[] }> };
    expect(body.data).toHaveLength(1);
    expect(longAnswered).toBe(false);
    expect(await running()).toBe(1); // the long request still runs: the short one did not wait for it

    long.destroy();
    await expect.poll(running, { timeout: 10_000, interval: 50 }).toBe(0);
    expect(longAnswered).toBe(false);
    // The worker serves on.
    expect((await embed(['a', 'b'])).status).toBe(200);
    expect(hearth.logs()).toMatch(/"route":"embeddings"[^\n]*"status":499/);
  }, 90_000);
});
