import { probeTable, runCacheScopeProbe, startProbeServer } from '../test/helpers/cache-scope-probe.ts';

/**
 * bench:prompt-cache-scope: issue #28's table (what `cached_tokens` tells an account about another's prompts)
 * against a real `hearth serve` with keys of several accounts, for each path a prompt can be matched on:
 * the native loop's slot reuse (4 slots, no host cache), its host-memory prompt cache (1 slot: every other
 * account's request takes the victim's slot, whose KV goes to the host cache) and node-llama-cpp's sequences.
 * Not a timing benchmark: the numbers are token counts. Usage:
 *   node --import tsx bench/prompt-cache-scope.ts [model.gguf] [-- extra serve flags, e.g. --prompt-cache-scope global]
 */
const argv = process.argv.slice(2);
const dash = argv.indexOf('--');
const model =
  (dash === 0 ? undefined : argv[0]) ?? process.env.HEARTH_TEST_MODEL ?? '../shared/models/stories260K.gguf';
const extra = dash >= 0 ? argv.slice(dash + 1) : [];

const CONFIGS: { name: string; args: string[] }[] = [
  {
    name: 'native, slot reuse (--slots 4 --prompt-cache-mib 0)',
    args: ['--engine', 'native', '--slots', '4', '--prompt-cache-mib', '0'],
  },
  { name: 'native, host-memory prompt cache (--slots 1)', args: ['--engine', 'native', '--slots', '1'] },
  { name: 'node-llama-cpp, sequence reuse (--slots 4)', args: ['--engine', 'node-llama-cpp', '--slots', '4'] },
];

for (const c of CONFIGS) {
  const { server, keys } = await startProbeServer(model, [...c.args, ...extra]);
  try {
    const result = await runCacheScopeProbe(server, keys);
    console.log(`\n${c.name}${extra.length > 0 ? ` ${extra.join(' ')}` : ''}\n\n${probeTable(result)}`);
  } finally {
    await server.stop();
  }
}
