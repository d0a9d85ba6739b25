/**
 * The native loop's host-memory prompt cache (native/src/prompt_cache.*), on the project's own tiny llama
 * (always available): a prompt whose KV a slot had to give up is restored from host memory when it comes
 * back, reported as cached tokens, with the same greedy output as evaluating it; a conversation that
 * grows keeps its longest state; with the cache off, nothing is restored. Cache partitions (issue #28):
 * a prompt restores and reuses only what its own partition left, in host memory or in a slot, and one
 * partition flooding the cache evicts its own entries, not another's. Skipped, saying why, without the addon.
 */
import { describe, expect, it } from 'vitest';
import { ensureTinyModel } from '../../models/test-model-path.ts';
import { nativeAddonAvailable, type NativeSlotEngine } from '../../src/worker/native-slot-engine.ts';
import { GREEDY_SAMPLING } from '../helpers/generation-job.ts';
import { type JobRun, startJob } from '../helpers/job-run.ts';
import { useNativeEngines } from '../helpers/native-engines.ts';

const addon = nativeAddonAvailable();
const skipReason = addon.ok ? '' : `native addon unavailable: ${addon.reason}`;

const GREEDY = GREEDY_SAMPLING;

/** Ordinary pieces of the tiny vocabulary, different for each offset (no newline: the model never stops early). */
const promptOf = (length: number, offset: number) =>
  Uint32Array.from({ length }, (_, i) => 200 + ((i * 37 + offset) % 900));

/** A greedy job of `maxTokens` on `prompt` (in `cachePartition` when given), run to its end. */
function run(engine: NativeSlotEngine, prompt: Uint32Array, maxTokens = 12, cachePartition?: string): Promise<JobRun> {
  const job = {
    promptTokens: prompt,
    maxTokens,
    stops: [],
    sampling: GREEDY,
    ...(cachePartition !== undefined ? { cachePartition } : {}),
  };
  return startJob(engine, job, { text: '', tokens: 0 }).done;
}

describe.skipIf(skipReason !== '')(`native host prompt cache${skipReason ? ` (skipped: ${skipReason})` : ''}`, () => {
  const loadEngine = useNativeEngines(() => ensureTinyModel(), { contextSize: 256, slots: 1, threads: 1 });
  const load = (promptCacheMiB: number, slots = 1, kvUnified = false) =>
    loadEngine({ promptCacheMiB, slots, kvUnified });

  it('restores a prompt no slot holds any more, reports it as cached, and generates the same text', async () => {
    const engine = await load(16);
    const a = promptOf(40, 1);
    const b = promptOf(40, 2);
    const coldA = await run(engine, a);
    const coldB = await run(engine, b); // takes the only slot: A's state goes to host memory
    const warmA = await run(engine, a);
    const warmB = await run(engine, b);

    expect([coldA.error, coldB.error, warmA.error, warmB.error]).toEqual([undefined, undefined, undefined, undefined]);
    expect(coldA.result?.cachedTokens).toBe(0);
    expect(coldB.result?.cachedTokens).toBe(0);
    expect(warmA.result?.cachedTokens).toBe(a.length - 1);
    expect(warmB.result?.cachedTokens).toBe(b.length - 1);
    expect(warmA.text).toBe(coldA.text);
    expect(warmB.text).toBe(coldB.text);
    expect(coldA.text).not.toBe(coldB.text);
    expect(engine.stats().promptCacheRestores).toBe(2);
  });

  it('keeps a growing conversation: the next turn restores the whole earlier exchange', async () => {
    const engine = await load(16);
    const turn1 = promptOf(30, 3);
    const first = await run(engine, turn1, 8);
    await run(engine, promptOf(30, 4)); // another conversation takes the slot
    // The slot held turn 1's prompt and the 8 generated tokens (the last one never decoded): all of it
    // that the longer prompt repeats comes back. Its text is not re-tokenized here: token ids are reused
    // only when identical, so the follow-up repeats the prompt and adds new tokens.
    const turn2 = Uint32Array.from([...turn1, ...promptOf(10, 5)]);
    const second = await run(engine, turn2, 4);
    expect(first.result?.completionTokens).toBe(8);
    expect(second.result?.cachedTokens).toBe(turn1.length);
    expect(engine.stats().promptCacheRestores).toBe(1);
  });

  it('restores into one KV buffer shared by all slots (--kv-unified) as into per-slot streams', async () => {
    const engine = await load(16, 2, true);
    const prompts = [0, 1, 2].map((i) => promptOf(36, 20 + i));
    const cold = await Promise.all(prompts.slice(0, 2).map((p) => run(engine, p)));
    cold.push(await run(engine, prompts[2]!)); // evicts the least recently used of the first two
    const warm = [];
    for (const p of prompts) warm.push(await run(engine, p));
    expect(warm.map((r) => r.text)).toEqual(cold.map((r) => r.text));
    for (const r of warm) expect(r.result?.cachedTokens).toBe(35);
    expect(engine.stats().promptCacheRestores).toBeGreaterThan(0);
  });

  it('restores nothing when the cache is off', async () => {
    const engine = await load(0);
    const a = promptOf(40, 6);
    const coldA = await run(engine, a);
    await run(engine, promptOf(40, 7));
    const again = await run(engine, a);
    expect(again.result?.cachedTokens).toBe(0);
    expect(again.text).toBe(coldA.text);
    expect(engine.stats().promptCacheRestores).toBe(0);
  });

  it('serves more distinct prompts than slots from host memory while two slots run side by side', async () => {
    const engine = await load(16, 2);
    const prompts = [0, 1, 2, 3].map((i) => promptOf(48, 10 + i));
    const inPairs = async () => [
      ...(await Promise.all(prompts.slice(0, 2).map((p) => run(engine, p)))),
      ...(await Promise.all(prompts.slice(2).map((p) => run(engine, p)))),
    ];
    const cold = await inPairs();
    const warm = await inPairs();
    expect(warm.map((r) => r.text)).toEqual(cold.map((r) => r.text));
    // Every prompt is back, either in its slot or from host memory: none is evaluated from scratch.
    for (const r of warm) expect(r.result?.cachedTokens).toBe(47);
  });

  it("restores only its own partition's state from host memory: another account's prompt reads nothing of it", async () => {
    const engine = await load(16);
    const secret = promptOf(60, 30);
    const sharedStart = Uint32Array.from([...secret.subarray(0, 40), ...promptOf(20, 31)]);
    const owner = await run(engine, secret, 12, 'account:a');
    const same = await run(engine, secret, 12, 'account:b'); // takes the only slot: A's state goes to host memory
    const partial = await run(engine, sharedStart, 12, 'account:c');
    const ownerAgain = await run(engine, secret, 12, 'account:a');
    expect([same.result?.cachedTokens, partial.result?.cachedTokens]).toEqual([0, 0]);
    expect(same.text).toBe(owner.text);
    expect(ownerAgain.result?.cachedTokens).toBe(secret.length - 1);
    expect(ownerAgain.text).toBe(owner.text);
    // The attacker's own state is its own to restore.
    expect((await run(engine, secret, 12, 'account:b')).result?.cachedTokens).toBe(secret.length - 1);
  });

  it("reuses a slot's prefix only within its partition, and clears another partition's KV before reusing the slot", async () => {
    const engine = await load(0, 2);
    const secret = promptOf(50, 32);
    const owner = await run(engine, secret, 8, 'account:a');
    const same = await run(engine, secret, 8, 'account:b');
    const ownerAgain = await run(engine, secret, 8, 'account:a'); // its slot was left alone
    expect(same.result?.cachedTokens).toBe(0);
    expect(ownerAgain.result?.cachedTokens).toBe(secret.length - 1);
    // A third account takes the least recently used slot (B's): B's KV is cleared, and the output is what a cold slot gives.
    const third = await run(engine, secret, 8, 'account:c');
    expect(third.result?.cachedTokens).toBe(0);
    expect([same.text, ownerAgain.text, third.text]).toEqual([owner.text, owner.text, owner.text]);
  });

  it("keeps an account's entry while another account floods the cache with distinct prompts (it evicts its own first)", async () => {
    const engine = await load(1); // 1 MiB; a 200-token state of the tiny model is about 50 KiB
    const mine = promptOf(200, 40);
    const floods = Array.from({ length: 40 }, (_, i) => promptOf(200, 100 + i));
    await run(engine, mine, 2, 'account:a');
    for (const p of floods) await run(engine, p, 2, 'account:flood');
    const back = await run(engine, mine, 2, 'account:a');
    expect(back.result?.cachedTokens).toBe(mine.length - 1);
    // The flood did fill the cache: its own oldest prompts are gone.
    expect((await run(engine, floods[0]!, 2, 'account:flood')).result?.cachedTokens).toBe(0);
  });

  it('is one plain LRU cache for jobs of one partition ("" or any): the flood evicts the oldest entry', async () => {
    const engine = await load(1);
    const first = promptOf(200, 41);
    await run(engine, first, 2);
    for (let i = 0; i < 40; i++) await run(engine, promptOf(200, 200 + i), 2);
    expect((await run(engine, first, 2)).result?.cachedTokens).toBe(0);
    expect((await run(engine, promptOf(200, 238), 2)).result?.cachedTokens).toBe(199);
  });

  it('serves one account exactly as the unpartitioned cache did: same cached tokens, restores and evaluated tokens', async () => {
    // Conversations that come back, grow and crowd out each other on 2 slots and a 1 MiB host cache.
    // ~200-token states of ~50 KiB: 6 hot conversations that come back, between 24 one-off prompts that
    // overflow the 1 MiB, so entries are restored and evicted.
    const base = Array.from({ length: 30 }, (_, i) => promptOf(200, 300 + i));
    const workload = Array.from({ length: 48 }, (_, turn) =>
      Uint32Array.from([
        ...base[turn % 2 === 0 ? (turn / 2) % 6 : 6 + (turn - 1) / 2]!,
        ...promptOf(turn % 3 === 0 ? 0 : 8, 400 + turn),
      ]),
    );
    const replay = async (partition: string | undefined) => {
      const engine = await load(1, 2);
      const cached: (number | undefined)[] = [];
      for (let i = 0; i < workload.length; i += 2) {
        const pair = await Promise.all(workload.slice(i, i + 2).map((p) => run(engine, p, 4, partition)));
        cached.push(...pair.map((r) => r.result?.cachedTokens));
      }
      const { promptTokens, promptCacheRestores } = engine.stats();
      return { cached, promptTokens, promptCacheRestores };
    };
    const shared = await replay(undefined);
    const oneAccount = await replay('account:default');
    expect(oneAccount).toEqual(shared);
    expect(shared.promptCacheRestores).toBeGreaterThan(0);
    expect(shared.cached.filter((n) => n === 0).length).toBeGreaterThan(24); // first visits and evicted ones
  });
});
