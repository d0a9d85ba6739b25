import { OpenAIEmbeddings } from '@langchain/openai';
import OpenAI from 'openai';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { MAX_EMBEDDING_INPUTS } from '../../../src/protocol/embeddings-request.ts';
import { type HearthProcess, startHearthProcess } from '../../helpers/hearth-process.ts';
import { tinyChatModel } from '../../helpers/test-model.ts';
import { expectDistinct, expectSameEmbedding } from '../../helpers/vector-agreement.ts';

/**
 * POST /api/inference/v1/embeddings end to end over a real `hearth serve` on the tiny chat model (the native
 * engine where the addon is built: the batched embedder, mean pooling), with the official openai SDK (which
 * asks for base64 by default and decodes it) and LangChain's OpenAIEmbeddings. A small context (128 tokens)
 * makes a too-long input cheap to send. Vectors computed along different paths (packed or alone) are compared
 * relative to their length, within f16 rounding (helpers/vector-agreement.ts), never component by component.
 */
let hearth: HearthProcess;
let client: OpenAI;
const MODEL_ID = 'local/tiny-chat';
const CONTEXT = 128;

beforeAll(async () => {
  hearth = await startHearthProcess({
    args: ['--model', await tinyChatModel(), '--model-id', MODEL_ID, '--slots', '2', '--context-size', String(CONTEXT)],
  });
  await hearth.waitReady();
  client = new OpenAI({ apiKey: hearth.key, baseURL: `${hearth.baseUrl}/api/inference/v1`, maxRetries: 0 });
});

afterAll(async () => {
  await hearth?.stop();
});

const post = (body: unknown) =>
  fetch(`${hearth.baseUrl}/api/inference/v1/embeddings`, {
    method: 'POST',
    headers: { authorization: `Bearer ${hearth.key}`, 'content-type': 'application/json' },
    body: JSON.stringify(body),
  });

const norm = (v: readonly number[]) => Math.sqrt(v.reduce((s, x) => s + x * x, 0));

describe('embeddings.create', () => {
  it('is served by the native engine here (the batched embedder)', async () => {
    const health = (await (await fetch(`${hearth.baseUrl}/health`)).json()) as { engine: { kind: string } };
    expect(health.engine.kind).toBe('native');
  });

  it('answers a string with one unit vector in the list shape, with usage', async () => {
    const r = await client.embeddings.create({
      model: MODEL_ID,
      input: 'Hello there',
      encoding_format: 'float',
      user: 'u-1',
    });
    expect(r.object).toBe('list');
    expect(r.model).toBe(MODEL_ID);
    expect(r.data).toHaveLength(1);
    expect(r.data[0]).toMatchObject({ object: 'embedding', index: 0 });
    const v = r.data[0]!.embedding;
    expect(v.length).toBeGreaterThan(1);
    expect(norm(v)).toBeCloseTo(1, 4);
    expect(r.usage.prompt_tokens).toBeGreaterThan(0);
    expect(r.usage.total_tokens).toBe(r.usage.prompt_tokens);
  });

  it('same text gives the same vector, different texts different vectors', async () => {
    const r = await client.embeddings.create({
      model: MODEL_ID,
      input: ['a cat sat', 'a cat sat', 'the stock market fell'],
      encoding_format: 'float',
    });
    expect(r.data.map((d) => d.index)).toEqual([0, 1, 2]);
    const [a, b, c] = r.data.map((d) => d.embedding);
    expectSameEmbedding(b!, a!);
    expectDistinct([a!, c!]);
    for (const v of [a!, b!, c!]) expect(norm(v)).toBeCloseTo(1, 4);
    const again = await client.embeddings.create({ model: MODEL_ID, input: 'a cat sat', encoding_format: 'float' });
    expectSameEmbedding(again.data[0]!.embedding, a!);
  });

  it('base64 (the SDK default) decodes to the float answer', async () => {
    const input = ['one input', 'and another one'];
    const floats = await client.embeddings.create({ model: MODEL_ID, input, encoding_format: 'float' });
    const decoded = await client.embeddings.create({ model: MODEL_ID, input }); // the SDK asks for base64 and decodes it
    expect(decoded.data.map((d) => d.embedding)).toEqual(floats.data.map((d) => d.embedding));
    // Decoded by hand: little-endian float32 (the same single-input request, so the same passes).
    const raw = await post({ model: MODEL_ID, input: 'one input', encoding_format: 'base64' });
    const body = (await raw.json()) as { data: Array<{ embedding: string }> };
    const bytes = Buffer.from(body.data[0]!.embedding, 'base64');
    const values = Array.from({ length: bytes.length / 4 }, (_, i) => bytes.readFloatLE(i * 4));
    const single = await client.embeddings.create({ model: MODEL_ID, input: 'one input', encoding_format: 'float' });
    expect(values).toEqual(single.data[0]!.embedding);
  });

  it('token inputs: an array of token arrays, and a single token array', async () => {
    const r = await client.embeddings.create({
      model: MODEL_ID,
      input: [
        [1, 5, 9],
        [1, 7],
      ],
      encoding_format: 'float',
    });
    expect(r.data).toHaveLength(2);
    expect(r.usage.prompt_tokens).toBe(5);
    const single = await client.embeddings.create({ model: MODEL_ID, input: [1, 5, 9], encoding_format: 'float' });
    expect(single.data).toHaveLength(1);
    expectSameEmbedding(single.data[0]!.embedding, r.data[0]!.embedding);
    expectDistinct([r.data[0]!.embedding, r.data[1]!.embedding]);
  });

  it('a 64-input request equals 64 one-input requests (packed into shared passes vs one pass each)', async () => {
    const texts = Array.from({ length: 64 }, (_, i) => `input number ${i}${' and more'.repeat(i % 5)}`);
    const batched = await client.embeddings.create({ model: MODEL_ID, input: texts, encoding_format: 'float' });
    const single = [];
    // One after the other: each is alone in its pass (concurrent ones would be gathered into shared passes).
    for (const t of texts)
      single.push(await client.embeddings.create({ model: MODEL_ID, input: t, encoding_format: 'float' }));
    expect(batched.data.map((d) => d.index)).toEqual(texts.map((_, i) => i));
    for (let i = 0; i < texts.length; i++)
      expectSameEmbedding(batched.data[i]!.embedding, single[i]!.data[0]!.embedding, texts[i]);
    // The bound tells these inputs apart: a vector swapped with another input's, or mixed with it, fails it.
    expectDistinct(single.map((r) => r.data[0]!.embedding));
    expect(batched.usage.prompt_tokens).toBe(single.reduce((n, r) => n + r.usage.prompt_tokens, 0));
  }, 240_000); // 65 requests: under the generic x64 kernels on a loaded 2-core machine they took over 60 s
});

describe('refusals: 400s naming the field', () => {
  const refused = async (body: unknown, param: string | null, status = 400) => {
    const r = await post(body);
    const json = (await r.json()) as { error: { param: string | null; type: string } };
    expect(r.status).toBe(status);
    expect(json.error.param).toBe(param);
    return json.error;
  };

  it('dimensions', async () => {
    await refused({ model: MODEL_ID, input: 'x', dimensions: 8 }, 'dimensions');
    await expect(client.embeddings.create({ model: MODEL_ID, input: 'x', dimensions: 8 })).rejects.toMatchObject({
      status: 400,
      param: 'dimensions',
    });
  });

  it('empty inputs', async () => {
    await refused({ model: MODEL_ID, input: '' }, 'input');
    await refused({ model: MODEL_ID, input: [] }, 'input');
    await refused({ model: MODEL_ID, input: ['ok', ''] }, 'input[1]');
    await refused({ model: MODEL_ID, input: [[1, 2], []] }, 'input[1]');
    await refused({ model: MODEL_ID }, 'input');
  });

  it('an input longer than the context, from its bytes or once tokenized', async () => {
    await refused({ model: MODEL_ID, input: ['short', 'word '.repeat(5000)] }, 'input[1]');
    await refused({ model: MODEL_ID, input: ['short', Array.from({ length: CONTEXT + 1 }, () => 5)] }, 'input[1]');
    await refused({ model: MODEL_ID, input: ['fine', 'ab '.repeat(CONTEXT)] }, 'input[1]');
    // One input sent as itself (not in a list) is named `input`.
    await refused({ model: MODEL_ID, input: 'ab '.repeat(CONTEXT) }, 'input');
    await refused({ model: MODEL_ID, input: Array.from({ length: CONTEXT + 1 }, () => 5) }, 'input');
  });

  it('too many inputs', async () => {
    await refused({ model: MODEL_ID, input: Array.from({ length: MAX_EMBEDDING_INPUTS + 1 }, () => 'x') }, 'input');
  });

  it('an unknown model is a 404 model_not_found', async () => {
    const e = await refused({ model: 'local/nope', input: 'x' }, 'model', 404);
    expect(e).toMatchObject({ code: 'model_not_found' });
  });

  it('a bad encoding_format, a bad token, an unknown field', async () => {
    await refused({ model: MODEL_ID, input: 'x', encoding_format: 'int8' }, 'encoding_format');
    await refused({ model: MODEL_ID, input: [[1, -2]] }, 'input[0][1]');
    await refused({ model: MODEL_ID, input: 'x', temperature: 1 }, 'temperature');
  });

  it('needs the API key', async () => {
    const r = await fetch(`${hearth.baseUrl}/api/inference/v1/embeddings`, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify({ model: MODEL_ID, input: 'x' }),
    });
    expect(r.status).toBe(401);
  });
});

describe('per-key limits', () => {
  it("the inputs' tokens count against the key's tokens per minute", async () => {
    const created = await fetch(`${hearth.baseUrl}/api/v1/keys`, {
      method: 'POST',
      headers: { authorization: `Bearer ${hearth.key}`, 'content-type': 'application/json' },
      body: JSON.stringify({ name: 'embed-tpm', limits: { tokensPerMinute: 10 } }),
    });
    expect(created.status).toBe(201);
    const { key } = (await created.json()) as { key: string };
    const limited = new OpenAI({ apiKey: key, baseURL: `${hearth.baseUrl}/api/inference/v1`, maxRetries: 0 });
    const first = await limited.embeddings.create({
      model: MODEL_ID,
      input: [Array.from({ length: 12 }, (_, i) => i + 1)],
    });
    expect(first.usage.prompt_tokens).toBe(12);
    const err = await limited.embeddings.create({ model: MODEL_ID, input: 'x' }).catch((e: unknown) => e);
    expect(err).toBeInstanceOf(OpenAI.RateLimitError);
    expect((err as InstanceType<typeof OpenAI.RateLimitError>).code).toBe('rate_limit_exceeded');
  });
});

describe("LangChain's OpenAIEmbeddings", () => {
  it('embedDocuments and embedQuery', async () => {
    const embeddings = new OpenAIEmbeddings({
      model: MODEL_ID,
      apiKey: hearth.key,
      configuration: { baseURL: `${hearth.baseUrl}/api/inference/v1` },
      maxRetries: 0,
    });
    const docs = await embeddings.embedDocuments(['a cat sat', 'the stock market fell']);
    expect(docs).toHaveLength(2);
    const query = await embeddings.embedQuery('a cat sat');
    expectSameEmbedding(query, docs[0]!);
    expectDistinct([query, docs[1]!]);
    expect(norm(query)).toBeCloseTo(1, 4);
  });
});
