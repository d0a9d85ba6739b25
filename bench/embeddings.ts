import OpenAI from 'openai';
import { startHearthProcess } from '../test/helpers/hearth-process.ts';
import { realTestModel, tinyBertModel, tinyChatModel } from '../test/helpers/test-model.ts';

/**
 * bench:embeddings: inputs embedded per second through a real `hearth serve` (native engine) for one request
 * of 256 inputs (the batched embedder: inputs packed into passes of about 512 tokens, one llama_decode each)
 * against 256 concurrent requests of one input each (each an HTTP request, a key admission and a worker task;
 * a worker gathers the ones it runs at once, up to --slots, into shared passes), on the tiny chat model, the tiny
 * BERT encoder (llama.cpp's encode pass, mean pooling) and, when present, stories260K
 * ($HEARTH_TEST_MODEL or ../shared/models/stories260K.gguf). Usage:
 *   npm run bench:embeddings [-- extra serve flags]
 */
const INPUTS = 256;
const ROUNDS = 3;
const extra = process.argv.slice(2).filter((a) => a !== '--');

const texts = (round: number) =>
  Array.from(
    { length: INPUTS },
    (_, i) => `document ${round}-${i}: the quick brown fox jumps over the lazy dog ${i % 7}`,
  );

async function bench(name: string, modelPath: string): Promise<void> {
  const hearth = await startHearthProcess({
    args: [
      '--model',
      modelPath,
      '--model-id',
      'local/bench',
      '--engine',
      'native',
      '--queue-limit',
      String(INPUTS * 2),
      ...extra,
    ],
  });
  try {
    await hearth.waitReady();
    const client = new OpenAI({ apiKey: hearth.key, baseURL: `${hearth.baseUrl}/api/inference/v1`, maxRetries: 0 });
    const embed = (input: string | string[]) =>
      client.embeddings.create({ model: 'local/bench', input, encoding_format: 'float' });
    await embed(texts(-1)); // warm-up: the embedding context is created at the first use
    const batched: number[] = [];
    const single: number[] = [];
    let tokens = 0;
    for (let round = 0; round < ROUNDS; round++) {
      let t = performance.now();
      const r = await embed(texts(round));
      batched.push(INPUTS / ((performance.now() - t) / 1000));
      tokens = r.usage.prompt_tokens;
      t = performance.now();
      await Promise.all(texts(round + ROUNDS).map((s) => embed(s)));
      single.push(INPUTS / ((performance.now() - t) / 1000));
    }
    const median = (xs: number[]) => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)]!;
    console.log(`${name}: ${INPUTS} inputs (${tokens} tokens), median of ${ROUNDS}`);
    console.log(`  1 request x ${INPUTS} inputs:  ${median(batched).toFixed(0)} inputs/s`);
    console.log(`  ${INPUTS} requests x 1 input:  ${median(single).toFixed(0)} inputs/s`);
    console.log(`  batched / single: ${(median(batched) / median(single)).toFixed(1)}x`);
  } finally {
    await hearth.stop();
  }
}

await bench('tiny chat model', await tinyChatModel());
await bench('tiny BERT encoder', await tinyBertModel());
const real = realTestModel();
if (real) await bench(`stories260K (${real})`, real);
else console.log('stories260K: not present (set HEARTH_TEST_MODEL), skipped');
