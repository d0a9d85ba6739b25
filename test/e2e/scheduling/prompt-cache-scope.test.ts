import { afterEach, describe, expect, it } from 'vitest';
import { type ProbeResult, probeTable, runCacheScopeProbe, startProbeServer } from '../../helpers/cache-scope-probe.ts';
import type { HearthProcess } from '../../helpers/hearth-process.ts';
import { realTestModel, tinyChatModel } from '../../helpers/test-model.ts';

/**
 * Issue #28 against the real CLI server, with keys of several accounts: another account's `cached_tokens`
 * for the victim's system prompt (the same prompt, one sharing its start) reads no more than for an unrelated
 * prompt, through the native loop's slot reuse, its host-memory prompt cache (one slot: every request of
 * another account takes the victim's slot and sends its KV to host memory) and node-llama-cpp's sequences,
 * while the victim's second turn still reuses its first. `--prompt-cache-scope global` is the shared cache
 * of before (the probe does see the leak there). On stories260K where present, else the project's tiny chat model.
 */
const modelPath = realTestModel();
let server: HearthProcess | undefined;
afterEach(async () => {
  await server?.stop();
  server = undefined;
});

async function probe(args: string[]): Promise<ProbeResult> {
  const started = await startProbeServer(modelPath ?? (await tinyChatModel()), args);
  server = started.server;
  const result = await runCacheScopeProbe(started.server, started.keys);
  console.log(`[prompt-cache-scope] ${args.join(' ')}\n${probeTable(result)}`);
  return result;
}

function expectScoped(r: ProbeResult): void {
  expect(r.victim.cachedTokens).toBe(0);
  expect(r.sameAsVictim.cachedTokens).toBeLessThanOrEqual(r.unrelated.cachedTokens);
  expect(r.sharedStart.cachedTokens).toBeLessThanOrEqual(r.unrelated.cachedTokens);
  // Each attacker account sent nothing before: nothing at all is reused, the template's own prefix included.
  expect([r.sameAsVictim.cachedTokens, r.sharedStart.cachedTokens, r.unrelated.cachedTokens]).toEqual([0, 0, 0]);
  // The victim's own second turn reuses the whole first prompt.
  expect(r.victimSecondTurn.cachedTokens).toBeGreaterThanOrEqual(r.victim.promptTokens - 1);
}

describe('prompt cache partitioned by account (default --prompt-cache-scope account)', () => {
  it('native engine, slot reuse (--slots 4, no host cache)', async () => {
    expectScoped(await probe(['--engine', 'native', '--slots', '4', '--prompt-cache-mib', '0']));
  });

  it('native engine, host-memory prompt cache (--slots 1: more conversations than slots)', async () => {
    expectScoped(await probe(['--engine', 'native', '--slots', '1', '--prompt-cache-mib', '64']));
  });

  it('node-llama-cpp engine, sequence reuse (--slots 4)', async () => {
    expectScoped(await probe(['--engine', 'node-llama-cpp', '--slots', '4']));
  });

  it('--prompt-cache-scope global shares one cache between accounts (single-tenant servers only): the probe reads the victim', async () => {
    const r = await probe([
      '--engine',
      'native',
      '--slots',
      '1',
      '--prompt-cache-mib',
      '64',
      '--prompt-cache-scope',
      'global',
    ]);
    expect(r.sameAsVictim.cachedTokens).toBe(r.victim.promptTokens - 1);
    expect(r.sharedStart.cachedTokens).toBeGreaterThan(r.unrelated.cachedTokens);
  });
});
