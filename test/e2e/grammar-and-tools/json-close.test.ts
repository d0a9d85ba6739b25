import { Ajv2020 } from 'ajv/dist/2020.js';
import OpenAI from 'openai';
import { existsSync } from 'node:fs';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { nativeAddonAvailable } from '../../../src/worker/native-slot-engine.ts';
import { type HearthProcess, startHearthProcess } from '../../helpers/hearth-process.ts';
import { tinyChatModel } from '../../helpers/test-model.ts';
import { NESTED_SCHEMA } from '../../helpers/schema-fixtures.ts';

/**
 * Under a grammar both engines close the JSON in time (issue #26): a reply that reaches max_tokens is still
 * complete, valid JSON, with finish_reason `length` (max_tokens ended it). The tiny chat model's weights are random
 * for these prompts and never close JSON on their own, so every parse below is the sampler's doing. When max_tokens
 * is shorter than any completion the reply is the cut text, finish_reason `length`, as before. The native engine
 * runs where its addon is built; the node-llama-cpp engine (src/worker/grammar-job-closer.ts) everywhere.
 */
const addon = nativeAddonAvailable();
const MODEL_ID = 'local/json-close';

/**
 * A nested object with a required array and strings. Its shortest completion, `{"n":"","o":{"t":[],"s":""}}`, is 28
 * tokens of this model's character-sized vocabulary (a tool call adds the `<tool_call>` wrapper and the name: about 90).
 */
const SCHEMA = NESTED_SCHEMA;
const valid = new Ajv2020({ strict: false }).compile(SCHEMA);
const ask = [{ role: 'user' as const, content: 'Describe a cat as JSON.' }];

type Format = OpenAI.ChatCompletionCreateParams['response_format'];
const JSON_OBJECT: Format = { type: 'json_object' };
const JSON_SCHEMA: Format = {
  type: 'json_schema',
  json_schema: { name: 'cat', schema: SCHEMA as unknown as Record<string, unknown>, strict: true },
};

describe.skipIf(!addon.ok)('a JSON reply cut by max_tokens is complete JSON (--engine native)', () =>
  closesJson('native'),
);
describe('a JSON reply cut by max_tokens is complete JSON (--engine node-llama-cpp)', () =>
  closesJson('node-llama-cpp'));

/** The suite, on one engine. */
function closesJson(engine: 'native' | 'node-llama-cpp') {
  let hearth: HearthProcess;
  let client: OpenAI;
  async function complete(format: Format, maxTokens: number, seed: number) {
    const r = await client.chat.completions.create({
      model: MODEL_ID,
      messages: ask,
      response_format: format,
      max_tokens: maxTokens,
      seed,
      temperature: 1,
    });
    return {
      text: r.choices[0]!.message.content ?? '',
      finish: r.choices[0]!.finish_reason,
      tokens: r.usage!.completion_tokens,
    };
  }
  beforeAll(async () => {
    hearth = await startHearthProcess({
      args: ['--model', await tinyChatModel(), '--model-id', MODEL_ID, '--slots', '2', '--engine', engine],
    });
    await hearth.waitReady();
    client = new OpenAI({ apiKey: hearth.key, baseURL: `${hearth.baseUrl}/api/inference/v1`, maxRetries: 0 });
  });
  afterAll(async () => {
    await hearth?.stop();
  });

  const seeds = (budgets: number[]) =>
    budgets.flatMap((maxTokens) => [1, 2, 3].map((seed) => [maxTokens, seed] as const));

  it.each(seeds([24, 40, 64, 100]))('json_object, max_tokens %i, seed %i', async (maxTokens, seed) => {
    const { text, finish, tokens } = await complete(JSON_OBJECT, maxTokens, seed);
    const value: unknown = JSON.parse(text);
    expect(typeof value === 'object' && value !== null && !Array.isArray(value)).toBe(true);
    expect(tokens).toBeLessThanOrEqual(maxTokens);
    expect(finish).toBe(tokens === maxTokens ? 'length' : 'stop');
  });

  it.each(seeds([32, 40, 64, 100]))('json_schema, max_tokens %i, seed %i', async (maxTokens, seed) => {
    const { text, finish, tokens } = await complete(JSON_SCHEMA, maxTokens, seed);
    expect(valid(JSON.parse(text)), JSON.stringify(valid.errors)).toBe(true);
    expect(tokens).toBeLessThanOrEqual(maxTokens);
    expect(finish).toBe(tokens === maxTokens ? 'length' : 'stop');
  });

  /** A json_schema answer sampled freely and cut by max_tokens: what the closing tokens must complete. */
  const CUT_SCHEMA_REQUEST = {
    model: MODEL_ID,
    messages: ask,
    response_format: JSON_SCHEMA,
    max_tokens: 40,
    temperature: 1,
  };

  it('streams the same closed JSON', async () => {
    const stream = await client.chat.completions.create({ ...CUT_SCHEMA_REQUEST, seed: 7, stream: true });
    let text = '';
    let finish: string | null = null;
    for await (const chunk of stream) {
      text += chunk.choices[0]?.delta.content ?? '';
      finish = chunk.choices[0]?.finish_reason ?? finish;
    }
    expect(valid(JSON.parse(text))).toBe(true);
    expect(finish).toBe('length');
  });

  it('reports a finite logprob for every token, the closing ones included', async () => {
    const r = await client.chat.completions.create({ ...CUT_SCHEMA_REQUEST, seed: 5, logprobs: true, top_logprobs: 2 });
    expect(valid(JSON.parse(r.choices[0]!.message.content ?? ''))).toBe(true);
    const logprobs = r.choices[0]!.logprobs!.content!;
    expect(logprobs.length).toBeGreaterThan(0);
    for (const t of logprobs) {
      expect(Number.isFinite(t.logprob)).toBe(true);
      expect(t.logprob).toBeLessThanOrEqual(0);
    }
  });

  it('a forced tool call cut by max_tokens has arguments that parse and validate', async () => {
    const tools: OpenAI.ChatCompletionTool[] = [
      { type: 'function', function: { name: 'describe', parameters: SCHEMA as unknown as Record<string, unknown> } },
    ];
    for (const [maxTokens, seed] of [
      [100, 1],
      [120, 2],
      [150, 3],
      [100, 4],
    ] as const) {
      const r = await client.chat.completions.create({
        model: MODEL_ID,
        messages: ask,
        tools,
        tool_choice: { type: 'function', function: { name: 'describe' } },
        max_tokens: maxTokens,
        seed,
        temperature: 1,
      });
      const call = r.choices[0]!.message.tool_calls![0]! as OpenAI.ChatCompletionMessageFunctionToolCall;
      expect(call.function.name).toBe('describe');
      expect(valid(JSON.parse(call.function.arguments))).toBe(true);
    }
  });

  it.each([
    [2, 1],
    [24, 2],
  ])(
    'max_tokens %i (shorter than any completion), seed %i: the cut text, finish_reason length',
    async (maxTokens, seed) => {
      const { text, finish, tokens } = await complete(JSON_SCHEMA, maxTokens, seed);
      expect(tokens).toBe(maxTokens);
      expect(finish).toBe('length');
      expect(text.startsWith('{"')).toBe(true);
      expect(() => JSON.parse(text)).toThrow();
    },
  );
}

/** The same on a 32,000-token Llama 2 vocabulary (random weights), where the workplace has the model. */
const LLAMA2 = '/work/shared/models/llama-2-tiny-random.gguf';
describe.skipIf(!addon.ok || !existsSync(LLAMA2))('on the Llama 2 vocabulary', () => {
  let llama: HearthProcess;
  let c: OpenAI;
  beforeAll(async () => {
    llama = await startHearthProcess({
      args: ['--model', LLAMA2, '--model-id', 'local/llama2-random', '--slots', '1', '--engine', 'native'],
    });
    await llama.waitReady();
    c = new OpenAI({ apiKey: llama.key, baseURL: `${llama.baseUrl}/api/inference/v1`, maxRetries: 0 });
  });
  afterAll(async () => {
    await llama?.stop();
  });

  it.each([
    [JSON_OBJECT, 40],
    [JSON_OBJECT, 100],
    [JSON_SCHEMA, 64],
    [JSON_SCHEMA, 100],
  ] as const)('%o, max_tokens %i: parses for seeds 1-3', async (format, maxTokens) => {
    for (const seed of [1, 2, 3]) {
      const r = await c.chat.completions.create({
        model: 'local/llama2-random',
        messages: ask,
        response_format: format,
        max_tokens: maxTokens,
        seed,
        temperature: 1,
      });
      const value: unknown = JSON.parse(r.choices[0]!.message.content ?? '');
      if (format === JSON_SCHEMA) expect(valid(value)).toBe(true);
      expect(r.usage!.completion_tokens).toBeLessThanOrEqual(maxTokens);
    }
  });
});
