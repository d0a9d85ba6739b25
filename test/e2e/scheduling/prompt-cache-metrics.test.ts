import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { postChat } from '../../helpers/chat-request.ts';
import { type HearthProcess } from '../../helpers/hearth-process.ts';
import { serveNeverStopping } from '../../helpers/served-model.ts';
import { nativeAddonAvailable } from '../../../src/worker/native-slot-engine.ts';

/**
 * Issue 23, item 4: the native engine's host-memory prompt cache is visible on /metrics (bytes, entries, capacity,
 * lookups and hits), and a request refused 503 (queue full) adds nothing to it: every lookup is an admitted job.
 * One slot and a queue of one, so that a burst of distinct conversations overflows it; the tiny llama never stops
 * by itself, so max_tokens ends each generation.
 */
const addon = nativeAddonAvailable();
const MODEL = 'local/never-stops';
const CACHE_MIB = 64;
let hearth: HearthProcess;

async function metrics(): Promise<Map<string, number>> {
  const text = await (await fetch(`${hearth.baseUrl}/metrics`)).text();
  const out = new Map<string, number>();
  for (const line of text.split('\n')) {
    const m = /^(hearth_prompt_cache_[a-z_]+|hearth_http_requests_total)(\{[^}]*\})? (\S+)$/.exec(line);
    if (m)
      out.set(
        `${m[1]}${m[2]?.includes('chat_completions') ? `:${/status="(\d+)"/.exec(m[2])?.[1]}` : ''}`,
        Number(m[3]),
      );
  }
  return out;
}

function chat(content: string): Promise<number> {
  return postChat(hearth, { model: MODEL, messages: [{ role: 'user', content }], max_tokens: 4 }).then(async (r) => {
    await r.arrayBuffer();
    return r.status;
  });
}

describe.skipIf(!addon.ok)('host prompt cache metrics (native engine)', () => {
  beforeAll(async () => {
    hearth = await serveNeverStopping(MODEL, {
      engine: 'native',
      slots: 1,
      'queue-limit': 1,
      'prompt-cache-mib': CACHE_MIB,
      'max-tokens': 64,
      'context-size': 512,
    });
  }, 60_000);

  afterAll(() => hearth?.stop());

  it('exports the capacity from --prompt-cache-mib and starts empty', async () => {
    const m = await metrics();
    expect(m.get('hearth_prompt_cache_capacity_bytes')).toBe(CACHE_MIB * (1 << 20));
    expect(m.get('hearth_prompt_cache_bytes') ?? 0).toBe(0);
    expect(m.get('hearth_prompt_cache_lookups_total') ?? 0).toBe(0);
  });

  it('a burst over slot + queue: the 503s add nothing (one lookup per answered request); a returning conversation is a hit', async () => {
    // Distinct conversations at once: one runs, one waits, the rest are refused 503 before reaching the engine.
    const statuses = await Promise.all(
      Array.from({ length: 12 }, (_, i) => chat(`conversation number ${i} ${'about the weather '.repeat(i + 2)}`)),
    );
    const answered = statuses.filter((s) => s === 200).length;
    const refused = statuses.filter((s) => s === 503).length;
    expect(answered + refused).toBe(12);
    expect(refused).toBeGreaterThan(0);
    // A worker reports its cache figures after each job, asynchronously to the answer: wait for the last report.
    await expect
      .poll(async () => (await metrics()).get('hearth_prompt_cache_lookups_total'), { timeout: 10_000 })
      .toBe(answered);
    let m = await metrics();
    expect(m.get('hearth_prompt_cache_entries')).toBeGreaterThan(0);
    expect(m.get('hearth_prompt_cache_bytes')).toBeGreaterThan(0);
    expect(m.get('hearth_prompt_cache_bytes')).toBeLessThanOrEqual(CACHE_MIB * (1 << 20));

    // A first conversation, another one (the slot gives the first's KV to the cache), the first again: restored.
    const hitsBefore = m.get('hearth_prompt_cache_hits_total') ?? 0;
    const first = `a returning conversation ${'with a long shared beginning '.repeat(6)}`;
    expect(await chat(first)).toBe(200);
    expect(await chat(`something else entirely ${'other words here '.repeat(6)}`)).toBe(200);
    expect(await chat(first)).toBe(200);
    // As above: the third answer's report may come after the answer itself.
    await expect
      .poll(async () => (await metrics()).get('hearth_prompt_cache_lookups_total'), { timeout: 10_000 })
      .toBe(answered + 3);
    m = await metrics();
    expect(m.get('hearth_prompt_cache_hits_total')).toBeGreaterThan(hitsBefore);
  });
});
