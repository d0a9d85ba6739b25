import OpenAI from 'openai';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { DEFAULT_TINY_REPLY } from '../../../models/tiny-llama.ts';
import type { HearthProcess } from '../../helpers/hearth-process.ts';
import { serveModel } from '../../helpers/served-model.ts';

/**
 * GET /models/{id}, x-request-id, the Responses API (text) and the refusals of the new request fields, end to
 * end with the official SDK over a real `hearth serve` on the tiny chat model (its scripted reply).
 */
let hearth: HearthProcess;
let client: OpenAI;
const MODEL_ID = 'local/tiny-chat';

beforeAll(async () => {
  ({ hearth, client } = await serveModel(MODEL_ID));
});
afterAll(() => hearth?.stop());

describe('models.retrieve', () => {
  it('finds the served model by its id (the SDK percent-encodes the /)', async () => {
    const m = await client.models.retrieve(MODEL_ID);
    expect(m).toMatchObject({ id: MODEL_ID, object: 'model', owned_by: 'local' });
  });

  it('takes the id with a literal / too, and answers 404 model_not_found for another', async () => {
    const auth = { authorization: `Bearer ${hearth.key}` };
    const plain = await fetch(`${hearth.baseUrl}/api/inference/v1/models/${MODEL_ID}`, { headers: auth });
    expect(plain.status).toBe(200);
    expect(((await plain.json()) as { id: string }).id).toBe(MODEL_ID);
    await expect(client.models.retrieve('local/other')).rejects.toMatchObject({ status: 404, code: 'model_not_found' });
    expect((await fetch(`${hearth.baseUrl}/api/inference/v1/models/${encodeURIComponent(MODEL_ID)}`)).status).toBe(401);
    // a malformed percent-escape in a path parameter is the edge's 400 invalid_path on every route (issue 9)
    const malformed = await fetch(`${hearth.baseUrl}/api/inference/v1/models/local%E0%A4`, { headers: auth });
    expect(malformed.status).toBe(400);
    expect(((await malformed.json()) as { error: { code: string } }).error.code).toBe('invalid_path');
    expect((await client.models.retrieve(MODEL_ID)).id).toBe(MODEL_ID); // the server is still up
  });
});

describe('x-request-id', () => {
  it('is on every answer, reaches the SDK, and is in the request log line', async () => {
    const { data, request_id } = await client.chat.completions
      .create({ model: MODEL_ID, messages: [{ role: 'user', content: 'Hi' }] })
      .withResponse();
    expect(data.choices[0]!.message.content).toBe(DEFAULT_TINY_REPLY);
    expect(request_id).toMatch(/^req_[0-9a-f]{32}$/);
    const error = await fetch(`${hearth.baseUrl}/nowhere`);
    expect(error.status).toBe(404);
    const errorId = error.headers.get('x-request-id');
    expect(errorId).toMatch(/^req_/);
    expect(errorId).not.toBe(request_id);
    const own = await fetch(`${hearth.baseUrl}/health`, { headers: { 'x-request-id': 'trace-42.a' } });
    expect(own.headers.get('x-request-id')).toBe('trace-42.a');
    const hostile = await fetch(`${hearth.baseUrl}/health`, { headers: { 'x-request-id': 'a b{}' } });
    expect(hostile.headers.get('x-request-id')).toMatch(/^req_/);
    await expect.poll(() => hearth.logs()).toContain(`"request_id":"${request_id}"`);
    expect(hearth.logs()).toContain(`"request_id":"${errorId}"`);
  });
});

describe('Responses API (text)', () => {
  it('responses.create answers text input with instructions', async () => {
    const r = await client.responses.create({ model: MODEL_ID, instructions: 'Be terse.', input: 'Say hello.' });
    expect(r.object).toBe('response');
    expect(r.id).toMatch(/^resp_/);
    expect(r.status).toBe('completed');
    expect(r.output_text).toBe(DEFAULT_TINY_REPLY);
    expect(r.output[0]).toMatchObject({ type: 'message', role: 'assistant', status: 'completed' });
    expect(r.usage!.output_tokens).toBe(3);
    expect(r.usage!.total_tokens).toBe(r.usage!.input_tokens + 3);
    expect((r as unknown as { store: boolean }).store).toBe(true); // kept by default (contract: store defaults to true)
  });

  it('multi-turn input items and max_output_tokens (incomplete)', async () => {
    const r = await client.responses.create({
      model: MODEL_ID,
      max_output_tokens: 1,
      input: [
        { role: 'user', content: 'Hi' },
        {
          type: 'message',
          role: 'assistant',
          content: [{ type: 'output_text', text: 'Hello.', annotations: [] }],
        } as never,
        { role: 'user', content: [{ type: 'input_text', text: 'Again.' }] },
      ],
    });
    expect(r.status).toBe('incomplete');
    expect(r.incomplete_details).toEqual({ reason: 'max_output_tokens' });
    expect(r.output_text).toBe('Hello! I');
  });

  it('responses.stream delivers the event sequence and the final response', async () => {
    const stream = client.responses.stream({ model: MODEL_ID, input: 'Say hello.' });
    const types: string[] = [];
    let text = '';
    stream.on('event', (e) => types.push(e.type));
    stream.on('response.output_text.delta', (e) => {
      text += e.delta;
    });
    const final = await stream.finalResponse();
    expect(text).toBe(DEFAULT_TINY_REPLY);
    expect(final.output_text).toBe(DEFAULT_TINY_REPLY);
    expect(types.slice(0, 4)).toEqual([
      'response.created',
      'response.in_progress',
      'response.output_item.added',
      'response.content_part.added',
    ]);
    // How many deltas depends on how the engine's steps group the tokens; together they are the reply (above).
    expect(types.filter((t) => t === 'response.output_text.delta').length).toBeGreaterThanOrEqual(1);
    expect(types.slice(-4)).toEqual([
      'response.output_text.done',
      'response.content_part.done',
      'response.output_item.done',
      'response.completed',
    ]);
  });

  it('responses.create with stream: true is an SSE stream of named events', async () => {
    const res = await fetch(`${hearth.baseUrl}/api/inference/v1/responses`, {
      method: 'POST',
      headers: { authorization: `Bearer ${hearth.key}`, 'content-type': 'application/json' },
      body: JSON.stringify({ model: MODEL_ID, input: 'Hi', stream: true }),
    });
    expect(res.headers.get('content-type')).toMatch(/^text\/event-stream/);
    const body = await res.text();
    expect(body.startsWith('event: response.created\ndata: {"type":"response.created","sequence_number":0,')).toBe(
      true,
    );
    expect(body).not.toContain('[DONE]');
    expect(body.trimEnd().split('\n\n').at(-1)).toMatch(/^event: response.completed\n/);
  });

  it.each([
    [{ store: 'yes' }, 'store'],
    [{ conversation: 'conv_1' }, 'conversation'],
    [{ tools: [{ type: 'web_search' }] }, 'tools[0].type'],
  ])('refuses %j with a 400 naming it', async (extra, param) => {
    await expect(client.responses.create({ model: MODEL_ID, input: 'x', ...extra } as never)).rejects.toMatchObject({
      status: 400,
      param,
    });
  });

  it('an unknown model is a 404 before anything streams', async () => {
    await expect(client.responses.create({ model: 'local/other', input: 'x', stream: true })).rejects.toMatchObject({
      status: 404,
      code: 'model_not_found',
    });
  });
});

describe('refusals of the new chat fields', () => {
  const chat = (extra: Record<string, unknown>) =>
    client.chat.completions.create({ model: MODEL_ID, messages: [{ role: 'user', content: 'x' }], ...extra } as never);

  it('a schema keyword the grammar converter cannot handle is a 400 naming it', async () => {
    const err = await chat({
      response_format: {
        type: 'json_schema',
        json_schema: { name: 'o', schema: { type: 'object', properties: { a: { type: 'string', pattern: '^x+$' } } } },
      },
    }).catch((e: unknown) => e);
    expect(err).toMatchObject({
      status: 400,
      param: 'response_format.json_schema.schema',
      code: 'unsupported_schema_keyword',
    });
    expect((err as Error).message).toContain("'pattern'");
    const tools = await chat({
      tools: [
        {
          type: 'function',
          function: { name: 'f', parameters: { type: 'object', properties: { n: { type: 'number', multipleOf: 3 } } } },
        },
      ],
      tool_choice: 'required',
    }).catch((e: unknown) => e);
    expect(tools).toMatchObject({ status: 400, param: 'tools', code: 'unsupported_schema_keyword' });
    expect((tools as Error).message).toContain("'multipleOf'");
  });

  it.each([
    [{ top_logprobs: 25, logprobs: true }, 'top_logprobs'],
    [
      {
        tool_choice: { type: 'function', function: { name: 'nope' } },
        tools: [{ type: 'function', function: { name: 'f' } }],
      },
      'tool_choice',
    ],
    [{ min_p: 2 }, 'min_p'],
    [{ mirostat: 2 }, 'mirostat'],
  ])('%j -> 400 naming %s', async (extra, param) => {
    await expect(chat(extra)).rejects.toMatchObject({ status: 400, param });
  });

  it('accepts the sampler extensions', async () => {
    const r = await chat({ top_k: 40, min_p: 0.05, repetition_penalty: 1.1, temperature: 0 });
    expect(r).toMatchObject({ object: 'chat.completion' });
  });
});
