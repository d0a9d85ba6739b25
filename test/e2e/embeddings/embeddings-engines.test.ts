import OpenAI from 'openai';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { INSTANT_EMBEDDING_DIMENSIONS } from '../../../src/worker/input-embedder.ts';
import { type HearthProcess, startHearthProcess, modelArgs } from '../../helpers/hearth-process.ts';
import { tinyChatModel } from '../../helpers/test-model.ts';

/**
 * POST /embeddings on the engines other than the native loop (embeddings.test.ts covers that one): the
 * node-llama-cpp engine (its LlamaEmbeddingContext, one input at a time) and the instant test engine (a
 * deterministic fake vector per input). Same shape, unit vectors, equal inputs -> equal vectors.
 */
const MODEL_ID = 'local/tiny-chat';
const norm = (v: readonly number[]) => Math.sqrt(v.reduce((s, x) => s + x * x, 0));
const maxDiff = (a: readonly number[], b: readonly number[]) => Math.max(...a.map((x, i) => Math.abs(x - b[i]!)));

for (const engine of ['node-llama-cpp', 'instant'] as const) {
  describe(`--engine ${engine}`, () => {
    let hearth: HearthProcess;
    let client: OpenAI;

    beforeAll(async () => {
      hearth = await startHearthProcess({
        args: modelArgs(await tinyChatModel(), MODEL_ID, { engine, 'context-size': 128 }),
      });
      await hearth.waitReady();
      client = new OpenAI({ apiKey: hearth.key, baseURL: `${hearth.baseUrl}/api/inference/v1`, maxRetries: 0 });
    });

    afterAll(async () => {
      await hearth?.stop();
    });

    it('answers unit vectors, equal for equal inputs and different for different ones', async () => {
      const r = await client.embeddings.create({
        model: MODEL_ID,
        input: ['a cat sat', 'the stock market fell', 'a cat sat'],
      });
      expect(r.data.map((d) => d.index)).toEqual([0, 1, 2]);
      const [a, b, c] = r.data.map((x) => x.embedding);
      const tokens = await client.embeddings.create({
        model: MODEL_ID,
        input: [
          [1, 5, 9],
          [1, 5, 9],
        ],
      });
      const [d, e] = tokens.data.map((x) => x.embedding);
      for (const v of [a!, b!, c!, d!]) expect(norm(v)).toBeCloseTo(1, 4);
      expect(maxDiff(a!, c!)).toBeLessThan(1e-5);
      expect(maxDiff(d!, e!)).toBeLessThan(1e-5);
      expect(maxDiff(a!, b!)).toBeGreaterThan(1e-3);
      expect(r.usage.prompt_tokens).toBeGreaterThanOrEqual(3);
      expect(tokens.usage.prompt_tokens).toBe(6);
      if (engine === 'instant') expect(a).toHaveLength(INSTANT_EMBEDDING_DIMENSIONS);
    });

    it('refuses an input longer than the context, naming it', async () => {
      await expect(
        client.embeddings.create({ model: MODEL_ID, input: ['ok', 'ab '.repeat(400)] }),
      ).rejects.toMatchObject({ status: 400, param: 'input[1]' });
    });
  });
}
