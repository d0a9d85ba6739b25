import OpenAI from 'openai';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { BERT_CLS_ID } from '../../../models/tiny-bert.ts';
import { nativeAddonAvailable } from '../../../src/worker/native-slot-engine.ts';
import { type HearthProcess, startHearthProcess } from '../../helpers/hearth-process.ts';
import { tinyBertModel } from '../../helpers/test-model.ts';
import { expectDistinct, expectSameEmbedding } from '../../helpers/vector-agreement.ts';

/**
 * A BERT-family encoder (the project's tiny BERT: llama.cpp's `bert` architecture, width 32, 128 positions, a
 * WordPiece vocabulary) loads and serves /embeddings on both engines, with the pooling its GGUF declares, and
 * answers every generation route with a 400 naming `model`. Two servers per engine: the same weights declaring
 * mean and cls pooling. Vectors of two paths (batched or alone) agree within f16 rounding, relative to their
 * length (helpers/vector-agreement.ts); embeddings-encoder-agreement.test.ts compares the two engines.
 */
const WIDTH = 32;
const POSITIONS = 128;
const addon = nativeAddonAvailable();

describe.skipIf(!addon.ok)('a BERT embedding model (--engine native)', () => encoderSuite('native'));
describe('a BERT embedding model (--engine node-llama-cpp)', () => encoderSuite('node-llama-cpp'));

const norm = (v: readonly number[]) => Math.sqrt(v.reduce((s, x) => s + x * x, 0));

function encoderSuite(engine: 'native' | 'node-llama-cpp') {
  let mean: HearthProcess;
  let cls: HearthProcess;
  const client = (h: HearthProcess) =>
    new OpenAI({ apiKey: h.key, baseURL: `${h.baseUrl}/api/inference/v1`, maxRetries: 0 });
  const embed = async (h: HearthProcess, input: string | string[] | number[] | number[][]) =>
    (await client(h).embeddings.create({ model: 'local/bert', input, encoding_format: 'float' })).data.map(
      (d) => d.embedding,
    );
  const post = (h: HearthProcess, route: string, body: unknown, headers: Record<string, string> = {}) =>
    fetch(`${h.baseUrl}/api/inference/v1/${route}`, {
      method: 'POST',
      headers: { authorization: `Bearer ${h.key}`, 'content-type': 'application/json', ...headers },
      body: JSON.stringify(body),
    });

  beforeAll(async () => {
    const start = async (pooling: 'mean' | 'cls') => {
      const h = await startHearthProcess({
        args: [
          '--model',
          await tinyBertModel({ pooling }),
          '--model-id',
          'local/bert',
          '--slots',
          '2',
          '--engine',
          engine,
        ],
      });
      await h.waitReady();
      return h;
    };
    [mean, cls] = await Promise.all([start('mean'), start('cls')]);
  });
  afterAll(async () => {
    await Promise.all([mean?.stop(), cls?.stop()]);
  });

  it('answers unit vectors of the model width', async () => {
    const vectors = await embed(mean, ['the cat sat on the mat', 'hello world']);
    expect(vectors).toHaveLength(2);
    for (const v of vectors) {
      expect(v).toHaveLength(WIDTH);
      expect(norm(v)).toBeCloseTo(1, 5);
    }
    expectDistinct(vectors);
  });

  it('gives an input the same vector alone or in a batch', async () => {
    const texts = ['the red house', 'a big tree', 'one two three four five', 'the red house', 'moon and sun'];
    const batched = await embed(mean, texts);
    const alone = [];
    for (const [i, text] of texts.entries()) {
      alone.push((await embed(mean, text))[0]!);
      expectSameEmbedding(batched[i]!, alone[i]!, text);
    }
    expectSameEmbedding(batched[3]!, batched[0]!);
    expectDistinct(alone.slice(0, 3));
  });

  // One token ([CLS] alone) is both the first token and the mean of all: the same weights give the same vector.
  // The native engine embeds a token array as given; node-llama-cpp wraps every input in [CLS] ... [SEP] itself.
  if (engine === 'native') {
    it('pools as the GGUF declares: cls and mean agree on a one-token input', async () => {
      const [meanOne] = await embed(mean, [BERT_CLS_ID]);
      const [clsOne] = await embed(cls, [BERT_CLS_ID]);
      expect(norm(meanOne!)).toBeCloseTo(1, 5);
      expectSameEmbedding(clsOne!, meanOne!);
    });
  }

  it('pools as the GGUF declares: cls and mean differ on a longer input', async () => {
    const [meanMany] = await embed(mean, 'the cat sat on the mat');
    const [clsMany] = await embed(cls, 'the cat sat on the mat');
    expectDistinct([meanMany!, clsMany!]);
    expect(norm(clsMany!)).toBeCloseTo(1, 5);
  });

  it('refuses an input longer than the model positions with context_length_exceeded', async () => {
    const r = await post(mean, 'embeddings', {
      model: 'local/bert',
      input: [Array.from({ length: POSITIONS + 10 }, () => BERT_CLS_ID)],
    });
    expect(r.status).toBe(400);
    expect(((await r.json()) as { error: { code: string } }).error.code).toBe('context_length_exceeded');
  });

  it.each([
    ['chat/completions', { model: 'local/bert', messages: [{ role: 'user', content: 'hi' }] }],
    ['chat/completions', { model: 'local/bert', messages: [{ role: 'user', content: 'hi' }], stream: true }],
    ['completions', { model: 'local/bert', prompt: 'the cat' }],
    ['responses', { model: 'local/bert', input: 'hi' }],
    ['messages', { model: 'local/bert', max_tokens: 8, messages: [{ role: 'user', content: 'hi' }] }],
  ] as const)('answers %s (%j) with a 400 naming model', async (route, body) => {
    const r = await post(mean, route, body, route === 'messages' ? { 'anthropic-version': '2023-06-01' } : {});
    expect(r.status).toBe(400);
    const text = await r.text();
    expect(text).toContain('embedding model');
    if (route !== 'messages') {
      const { error } = JSON.parse(text) as { error: { type: string; code: string; param: string } };
      expect(error).toMatchObject({ type: 'invalid_request_error', code: 'model_not_supported', param: 'model' });
    }
  });

  it('still embeds after the refusals (no slot or worker lost)', async () => {
    for (let i = 0; i < 4; i++) {
      const r = await post(mean, 'chat/completions', {
        model: 'local/bert',
        messages: [{ role: 'user', content: 'hi' }],
      });
      expect(r.status).toBe(400);
    }
    const vectors = await embed(
      mean,
      Array.from({ length: 32 }, (_, i) => `document ${i}`),
    );
    expect(vectors).toHaveLength(32);
    const health = (await (await fetch(`${mean.baseUrl}/health`)).json()) as { engine: { kind: string } };
    expect(health.engine.kind).toBe(engine);
  });
}
