/**
 * The cost of closing JSON in time (issue #26; the native engine, or `--engine node-llama-cpp`): tokens/s of grammar jobs with closing on (the
 * default: within the last 64 tokens of the budget the sampler checks that the grammar can still complete) and
 * off (HEARTH_CLOSING_HORIZON=0), one `hearth serve` each, one slot, sequential requests at temperature 1 (seeds
 * 1..N). max_tokens 64 puts the whole reply inside the checked window (the worst case); 256 shows it amortised.
 *
 *   node --import tsx bench/json-close-cost.ts [--model <gguf>] [--requests 12] [--engine native|node-llama-cpp]
 */
import { startBenchHearth } from './lib/servers.ts';
import { tinyChatModel } from '../test/helpers/test-model.ts';
import { NESTED_SCHEMA } from '../test/helpers/schema-fixtures.ts';
import { modelArgs } from '../test/helpers/hearth-process.ts';
import { postChat } from './lib/chat-fetch.ts';

const args = process.argv.slice(2);
const flag = (name: string) => {
  const i = args.indexOf(name);
  return i >= 0 ? args[i + 1] : undefined;
};
const REQUESTS = Number(flag('--requests') ?? 12);
const ENGINE = flag('--engine') ?? 'native';
const SCHEMA = NESTED_SCHEMA;
const FORMATS = {
  json_object: { type: 'json_object' },
  json_schema: { type: 'json_schema', json_schema: { name: 'cat', schema: SCHEMA, strict: true } },
};

async function measure(
  horizon: string | undefined,
  model: string,
): Promise<Record<string, { tokensPerSecond: number; parsed: number }>> {
  const env = horizon === undefined ? {} : { HEARTH_CLOSING_HORIZON: horizon };
  const previous = process.env.HEARTH_CLOSING_HORIZON;
  Object.assign(process.env, env);
  const hearth = await startBenchHearth(modelArgs(model, 'local/bench', { slots: 1, engine: ENGINE }));
  if (previous === undefined) delete process.env.HEARTH_CLOSING_HORIZON;
  const out: Record<string, { tokensPerSecond: number; parsed: number }> = {};
  try {
    for (const [name, format] of Object.entries(FORMATS)) {
      for (const maxTokens of [64, 256]) {
        let tokens = 0;
        let parsed = 0;
        const start = performance.now();
        for (let seed = 1; seed <= REQUESTS; seed++) {
          const r = await postChat(hearth.baseUrl, hearth.key, {
            model: 'local/bench',
            messages: [{ role: 'user', content: 'Describe a cat as JSON.' }],
            response_format: format,
            max_tokens: maxTokens,
            seed,
            temperature: 1,
          });
          const body = (await r.json()) as {
            choices: { message: { content: string } }[];
            usage: { completion_tokens: number };
          };
          tokens += body.usage.completion_tokens;
          try {
            JSON.parse(body.choices[0]!.message.content);
            parsed++;
          } catch {
            /* counted as not parsed */
          }
        }
        out[`${name} max_tokens ${maxTokens}`] = {
          tokensPerSecond: Math.round((tokens / (performance.now() - start)) * 1000),
          parsed,
        };
      }
    }
  } finally {
    await hearth.stop();
  }
  return out;
}

const model = flag('--model') ?? (await tinyChatModel());
const off = await measure('0', model);
const on = await measure(undefined, model);
console.log(
  `model ${model}, --engine ${ENGINE}, ${REQUESTS} sequential requests per row (tokens/s incl. HTTP and prompt; parsed = replies that JSON.parse)`,
);
for (const row of Object.keys(on)) {
  console.log(
    `${row.padEnd(24)} closing off: ${String(off[row]!.tokensPerSecond).padStart(6)} tok/s, ${off[row]!.parsed}/${REQUESTS} parse | on: ${String(on[row]!.tokensPerSecond).padStart(6)} tok/s, ${on[row]!.parsed}/${REQUESTS} parse`,
  );
}
