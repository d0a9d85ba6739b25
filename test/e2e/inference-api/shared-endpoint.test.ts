import OpenAI from 'openai';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { DEFAULT_TINY_REPLY } from '../../../models/tiny-llama.ts';
import type { HearthProcess } from '../../helpers/hearth-process.ts';
import { serveModel } from '../../helpers/served-model.ts';

/** The shared endpoint end to end: the real CLI server on the project's tiny ChatML model, called with the official SDK. */
let hearth: HearthProcess;
let client: OpenAI;
const MODEL_ID = 'local/tiny-chat';
/** The tiny chat model's scripted reply is 3 tokens, then EOS (models/README.md). */
const REPLY_TOKENS = 3;

beforeAll(async () => {
  ({ hearth, client } = await serveModel(MODEL_ID, ['--slots', '2', '--body-limit', '65536']));
});
afterAll(() => hearth?.stop());

const greet = [
  { role: 'system' as const, content: 'You are terse.' },
  { role: 'user' as const, content: 'Say hello.' },
];

describe('official openai SDK', () => {
  it('lists the served model', async () => {
    const page = await client.models.list();
    expect(page.data.map((m) => m.id)).toEqual([MODEL_ID]);
    expect(page.data[0]!.owned_by).toBe('local');
    expect((page.data[0] as unknown as { hearth: { state: string; context_length: number } }).hearth).toMatchObject({
      state: 'ready',
      context_length: 2048,
    });
  });

  it('answers a JSON completion with exact finish_reason and usage', async () => {
    const r = await client.chat.completions.create({ model: MODEL_ID, messages: greet, temperature: 0 });
    expect(r.object).toBe('chat.completion');
    expect(r.id).toMatch(/^chatcmpl-/);
    expect(r.choices[0]!.message).toMatchObject({ role: 'assistant', content: DEFAULT_TINY_REPLY });
    expect(r.choices[0]!.finish_reason).toBe('stop');
    expect(r.usage!.completion_tokens).toBe(REPLY_TOKENS);
    expect(r.usage!.prompt_tokens).toBeGreaterThan(5);
    expect(r.usage!.total_tokens).toBe(r.usage!.prompt_tokens + r.usage!.completion_tokens);
  });

  it('streams chunks that reassemble to the same reply, with role first and usage last', async () => {
    const stream = await client.chat.completions.create({
      model: MODEL_ID,
      messages: greet,
      temperature: 0,
      stream: true,
      stream_options: { include_usage: true },
    });
    const chunks = [];
    for await (const c of stream) chunks.push(c);
    expect(chunks[0]!.choices[0]!.delta.role).toBe('assistant');
    const text = chunks.map((c) => c.choices[0]?.delta.content ?? '').join('');
    expect(text).toBe(DEFAULT_TINY_REPLY);
    const finish = chunks.find((c) => c.choices[0]?.finish_reason);
    expect(finish!.choices[0]!.finish_reason).toBe('stop');
    const last = chunks.at(-1)!;
    expect(last.choices).toEqual([]);
    expect(last.usage).toMatchObject({ completion_tokens: REPLY_TOKENS });
    expect(new Set(chunks.map((c) => c.id)).size).toBe(1);
  });

  it('stops at max_tokens with finish_reason length and exact completion_tokens', async () => {
    const r = await client.chat.completions.create({ model: MODEL_ID, messages: greet, temperature: 0, max_tokens: 2 });
    expect(r.choices[0]!.finish_reason).toBe('length');
    expect(r.usage!.completion_tokens).toBe(2);
    expect(DEFAULT_TINY_REPLY.startsWith(r.choices[0]!.message.content!)).toBe(true);
  });

  it('honours stop sequences without emitting them', async () => {
    const r = await client.chat.completions.create({
      model: MODEL_ID,
      messages: greet,
      temperature: 0,
      stop: ['tiny'],
    });
    expect(r.choices[0]!.finish_reason).toBe('stop');
    expect(r.choices[0]!.message.content).toBe(DEFAULT_TINY_REPLY.slice(0, DEFAULT_TINY_REPLY.indexOf('tiny')));
  });

  it('reports reused prefix tokens as cached_tokens', async () => {
    const messages = [
      { role: 'system' as const, content: 'A shared system prompt that many requests repeat word for word.' },
      { role: 'user' as const, content: 'Say hello.' },
    ];
    await client.chat.completions.create({ model: MODEL_ID, messages, temperature: 0 });
    const second = await client.chat.completions.create({ model: MODEL_ID, messages, temperature: 0 });
    const details = (second.usage as unknown as { prompt_tokens_details: { cached_tokens: number } })
      .prompt_tokens_details;
    expect(details.cached_tokens).toBeGreaterThan(10);
    expect(details.cached_tokens).toBeLessThan(second.usage!.prompt_tokens);
  });

  it('raises AuthenticationError for a bad key', async () => {
    const bad = new OpenAI({
      apiKey: 'hk_nosuchkey_aaaaaaaaaaaaaaaaaaaaaaaa',
      baseURL: `${hearth.baseUrl}/api/inference/v1`,
      maxRetries: 0,
    });
    await expect(bad.chat.completions.create({ model: MODEL_ID, messages: greet })).rejects.toBeInstanceOf(
      OpenAI.AuthenticationError,
    );
    await expect(bad.models.list()).rejects.toBeInstanceOf(OpenAI.AuthenticationError);
  });

  it('raises NotFoundError for an unknown model', async () => {
    const err = await client.chat.completions.create({ model: 'local/nope', messages: greet }).catch((e: unknown) => e);
    expect(err).toBeInstanceOf(OpenAI.NotFoundError);
    expect((err as InstanceType<typeof OpenAI.NotFoundError>).code).toBe('model_not_found');
  });
});

describe('bad input over raw HTTP', () => {
  const post = (body: string, headers: Record<string, string> = {}) =>
    fetch(`${hearth.baseUrl}/api/inference/v1/chat/completions`, {
      method: 'POST',
      headers: { authorization: `Bearer ${hearth.key}`, 'content-type': 'application/json', ...headers },
      body,
    });
  const errorOf = async (r: Response) =>
    ((await r.json()) as { error: { message: string; type: string; code: string | null; param: string | null } }).error;

  it.each([
    ['malformed JSON', '{"model":', 400, 'invalid_json', null],
    ['a non-object body', '[1,2]', 400, 'invalid_type', null],
    ['missing messages', JSON.stringify({ model: MODEL_ID }), 400, 'missing_required_parameter', 'messages'],
    ['empty messages', JSON.stringify({ model: MODEL_ID, messages: [] }), 400, 'empty_array', 'messages'],
    [
      'a wrong type',
      JSON.stringify({ model: MODEL_ID, messages: greet, temperature: 'hot' }),
      400,
      'invalid_type',
      'temperature',
    ],
    [
      'an out-of-range value',
      JSON.stringify({ model: MODEL_ID, messages: greet, temperature: 3 }),
      400,
      'invalid_value',
      'temperature',
    ],
    [
      'an unknown role',
      JSON.stringify({ model: MODEL_ID, messages: [{ role: 'wizard', content: 'x' }] }),
      400,
      'invalid_value',
      'messages[0].role',
    ],
    ['n > 1', JSON.stringify({ model: MODEL_ID, messages: greet, n: 2 }), 400, 'unsupported_parameter', 'n'],
    [
      'functions (legacy)',
      JSON.stringify({ model: MODEL_ID, messages: greet, functions: [{ name: 'f' }] }),
      400,
      'unsupported_parameter',
      'functions',
    ],
    [
      'a malformed tool',
      JSON.stringify({
        model: MODEL_ID,
        messages: greet,
        tools: [{ type: 'function', function: { name: 'no spaces' } }],
      }),
      400,
      'invalid_value',
      'tools[0].function.name',
    ],
    [
      'an unknown field',
      JSON.stringify({ model: MODEL_ID, messages: greet, frobnicate: 1 }),
      400,
      'unknown_parameter',
      'frobnicate',
    ],
    ['an unknown model', JSON.stringify({ model: 'x/y', messages: greet }), 404, 'model_not_found', 'model'],
  ])('%s -> %i %s', async (_name, body, status, code, param) => {
    const r = await post(body);
    expect(r.status).toBe(status);
    expect(r.headers.get('content-type')).toBe('application/json');
    const e = await errorOf(r);
    expect(e.code).toBe(code);
    expect(e.param).toBe(param);
    expect(e.message.length).toBeGreaterThan(0);
  });

  it('huge messages: a body over the limit -> 413 payload_too_large', async () => {
    const r = await post(
      JSON.stringify({ model: MODEL_ID, messages: [{ role: 'user', content: 'x'.repeat(100_000) }] }),
    );
    expect(r.status).toBe(413);
    expect((await errorOf(r)).code).toBe('payload_too_large');
  });

  it("a prompt longer than the context -> 400 context_length_exceeded, naming the API's own prompt field", async () => {
    const words = Array.from({ length: 2500 }, (_, i) => `w${i % 10}`).join(' ');
    const r = await post(JSON.stringify({ model: MODEL_ID, messages: [{ role: 'user', content: words }] }));
    expect(r.status).toBe(400);
    expect(await errorOf(r)).toMatchObject({ code: 'context_length_exceeded', param: 'messages' });
    for (const [path, body, field] of [
      ['completions', { prompt: words }, 'prompt'],
      ['completions', { prompt: Array.from({ length: 3000 }, () => 5) }, 'prompt'],
      ['responses', { input: words }, 'input'],
    ] as const) {
      const other = await fetch(`${hearth.baseUrl}/api/inference/v1/${path}`, {
        method: 'POST',
        headers: { authorization: `Bearer ${hearth.key}`, 'content-type': 'application/json' },
        body: JSON.stringify({ model: MODEL_ID, ...body }),
      });
      expect(other.status, path).toBe(400);
      const e = await errorOf(other);
      expect(e, path).toMatchObject({ code: 'context_length_exceeded', param: field });
      expect(e.message, path).toContain(`'${field}' uses`);
    }
  });

  it("Responses names its own field when the model has no thinking switch: 'reasoning.effort'", async () => {
    const r = await fetch(`${hearth.baseUrl}/api/inference/v1/responses`, {
      method: 'POST',
      headers: { authorization: `Bearer ${hearth.key}`, 'content-type': 'application/json' },
      body: JSON.stringify({ model: MODEL_ID, input: 'hi', reasoning: { effort: 'low' } }),
    });
    expect(r.status).toBe(400);
    const e = await errorOf(r);
    expect(e).toMatchObject({ code: 'unsupported_parameter', param: 'reasoning.effort' });
    expect(e.message).toContain("'reasoning.effort'");
    const chat = await post(
      JSON.stringify({ model: MODEL_ID, messages: [{ role: 'user', content: 'hi' }], reasoning_effort: 'low' }),
    );
    expect(await errorOf(chat)).toMatchObject({ code: 'unsupported_parameter', param: 'reasoning_effort' });
  });

  it('an error echoes a long client value cut at 64 characters (a model id, a tool name, a response id)', async () => {
    const long = 'm'.repeat(5_000);
    const cut = `${'m'.repeat(64)}...`;
    const unknownModel = await post(JSON.stringify({ model: long, messages: [{ role: 'user', content: 'hi' }] }));
    expect(unknownModel.status).toBe(404);
    expect((await errorOf(unknownModel)).message).toContain(`'${cut}'`);
    const tool = { type: 'function', function: { name: long, parameters: { type: 'object' } } };
    const badTool = await post(
      JSON.stringify({ model: MODEL_ID, messages: [{ role: 'user', content: 'hi' }], tools: [tool] }),
    );
    expect(badTool.status).toBe(400);
    const toolError = await errorOf(badTool);
    expect(toolError.message).toContain(`"${cut}"`);
    expect(toolError.message.length).toBeLessThan(300);
    const response = await fetch(`${hearth.baseUrl}/api/inference/v1/responses/resp_${long.slice(0, 1000)}`, {
      headers: { authorization: `Bearer ${hearth.key}` },
    });
    expect(response.status).toBe(404);
    expect((await errorOf(response)).message.length).toBeLessThan(200);
  });

  it('missing or malformed bearer -> 401 Unauthorized', async () => {
    for (const auth of ['', 'Bearer', 'Basic abc', `Bearer ${hearth.key}x`]) {
      const r = await fetch(`${hearth.baseUrl}/api/inference/v1/models`, {
        headers: auth ? { authorization: auth } : {},
      });
      expect(r.status).toBe(401);
      const e = await errorOf(r);
      expect(e.message).toBe('Unauthorized');
      expect(e.code).toBe('invalid_api_key');
    }
  });

  it('unknown route -> 404 JSON; wrong method -> 405 JSON with Allow', async () => {
    const r404 = await fetch(`${hearth.baseUrl}/api/inference/v1/nothing`);
    expect(r404.status).toBe(404);
    expect((await errorOf(r404)).code).toBe('route_not_found');
    const r405 = await fetch(`${hearth.baseUrl}/api/inference/v1/chat/completions`, {
      headers: { authorization: `Bearer ${hearth.key}` },
    });
    expect(r405.status).toBe(405);
    expect(r405.headers.get('allow')).toBe('POST');
    expect((await errorOf(r405)).code).toBe('method_not_allowed');
  });

  it('keeps serving after all of the above', async () => {
    const health = await fetch(`${hearth.baseUrl}/health`);
    expect(health.status).toBe(200);
    const r = await client.chat.completions.create({ model: MODEL_ID, messages: greet, temperature: 0 });
    expect(r.choices[0]!.message.content).toBe(DEFAULT_TINY_REPLY);
    expect(hearth.proc.exitCode).toBeNull();
  });
});
