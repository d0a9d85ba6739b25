import OpenAI from 'openai';
import { afterAll, describe, it } from 'vitest';
import { nativeAddonAvailable } from '../../../src/worker/native-slot-engine.ts';
import { type HearthProcess, startHearthProcess } from '../../helpers/hearth-process.ts';
import { tinyBertModel } from '../../helpers/test-model.ts';
import { expectDistinct, expectSameEmbedding } from '../../helpers/vector-agreement.ts';

const addon = nativeAddonAvailable();

/**
 * Both engines run llama.cpp's BERT graph on the same tokens ([CLS] text [SEP]) with the GGUF's pooling: the
 * native batched embedder (several inputs packed into one encode pass) agrees with node-llama-cpp's one-input
 * embedding context, the reference here, within f16 rounding relative to the vectors' length
 * (helpers/vector-agreement.ts). One of the numeric files npm run test:cpu-variants runs per CPU build: the native
 * server then computes with that build, node-llama-cpp's with ggml's pick for this CPU (two CPUs' arithmetic).
 */
describe.skipIf(!addon.ok)('a BERT embedding model: the native engine agrees with node-llama-cpp', () => {
  const servers: HearthProcess[] = [];
  afterAll(async () => {
    await Promise.all(servers.map((h) => h.stop()));
  });

  it.each(['mean', 'cls'] as const)('%s pooling, batched', async (pooling) => {
    const model = await tinyBertModel({ pooling });
    const texts = ['the cat sat on the mat', 'hello world', 'search query: red house', 'one'];
    const vectorsOn = async (engine: string) => {
      const h = await startHearthProcess({ args: ['--model', model, '--model-id', 'local/bert', '--engine', engine] });
      servers.push(h);
      await h.waitReady();
      const client = new OpenAI({ apiKey: h.key, baseURL: `${h.baseUrl}/api/inference/v1`, maxRetries: 0 });
      return (await client.embeddings.create({ model: 'local/bert', input: texts, encoding_format: 'float' })).data.map(
        (d) => d.embedding,
      );
    };
    const [native, reference] = await Promise.all([vectorsOn('native'), vectorsOn('node-llama-cpp')]);
    for (let i = 0; i < texts.length; i++) expectSameEmbedding(native[i]!, reference[i]!, texts[i]);
    expectDistinct(reference);
  });
});
