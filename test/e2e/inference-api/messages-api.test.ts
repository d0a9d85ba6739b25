import Anthropic from '@anthropic-ai/sdk';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { DEFAULT_TINY_REPLY } from '../../../models/tiny-llama.ts';
import type { HearthProcess } from '../../helpers/hearth-process.ts';
import { serveModel } from '../../helpers/served-model.ts';

/**
 * POST /api/inference/v1/messages and /messages/count_tokens (the Anthropic Messages API) end to end with the
 * official @anthropic-ai/sdk (base URL `.../api/inference`: the SDK adds `/v1/messages`) and raw fetch, over
 * a real `hearth serve` on the tiny chat model (its scripted reply: 3 tokens, then EOS). Forced tool calls
 * are grammar-constrained, so even these random weights give a well-formed tool_use block.
 */
let hearth: HearthProcess;
let client: Anthropic;
const MODEL_ID = 'local/tiny-chat';

beforeAll(async () => {
  hearth = (await serveModel(MODEL_ID)).hearth;
  client = new Anthropic({ apiKey: hearth.key, baseURL: `${hearth.baseUrl}/api/inference`, maxRetries: 0 });
});
afterAll(() => hearth?.stop());

const post = (path: string, body: unknown, headers: Record<string, string> = { 'x-api-key': hearth.key }) =>
  fetch(`${hearth.baseUrl}/api/inference/v1/${path}`, {
    method: 'POST',
    headers: { 'content-type': 'application/json', 'anthropic-version': '2023-06-01', ...headers },
    body: typeof body === 'string' ? body : JSON.stringify(body),
  });

const hi: Anthropic.MessageParam[] = [{ role: 'user', content: 'Hi' }];

/** temperature, top_p, top_k: Messages API fields that SDK 1.14's types no longer list (the SDK still sends them). */
const SAMPLING = { temperature: 0, top_p: 0.9, top_k: 40 } as object;

const WEATHER: Anthropic.Tool = {
  name: 'get_weather',
  description: 'Current weather in a city',
  input_schema: {
    type: 'object',
    properties: { city: { type: 'string', enum: ['Paris', 'Oslo'] } },
    required: ['city'],
    additionalProperties: false,
  },
};

describe('messages.create', () => {
  it('answers in the message shape: a text block, end_turn, usage', async () => {
    const m = await client.messages.create({ model: MODEL_ID, max_tokens: 64, messages: hi });
    expect(m.type).toBe('message');
    expect(m.role).toBe('assistant');
    expect(m.id).toMatch(/^msg_/);
    expect(m.model).toBe(MODEL_ID);
    expect(m.content).toEqual([{ type: 'text', text: DEFAULT_TINY_REPLY }]);
    expect(m.stop_reason).toBe('end_turn');
    expect(m.stop_sequence).toBeNull();
    expect(m.usage.output_tokens).toBe(3);
    expect(m.usage.input_tokens).toBeGreaterThan(0);
  });

  it("max_tokens cuts the answer short with stop_reason 'max_tokens'", async () => {
    const m = await client.messages.create({ model: MODEL_ID, max_tokens: 2, messages: hi });
    expect(m.content).toEqual([{ type: 'text', text: 'Hello! I am a tiny' }]);
    expect(m.stop_reason).toBe('max_tokens');
    expect(m.usage.output_tokens).toBe(2);
  });

  it("stop_sequences end it with stop_reason 'stop_sequence' naming the sequence", async () => {
    const m = await client.messages.create({
      model: MODEL_ID,
      max_tokens: 64,
      messages: hi,
      stop_sequences: ['zzz', ' tiny'],
    });
    expect(m.content).toEqual([{ type: 'text', text: 'Hello! I am a' }]);
    expect(m.stop_reason).toBe('stop_sequence');
    expect(m.stop_sequence).toBe(' tiny');
  });

  it('takes system as a string or text blocks, content blocks, and the sampling fields', async () => {
    const blocks = await client.messages.create({
      model: MODEL_ID,
      max_tokens: 64,
      system: [{ type: 'text', text: 'Be brief.' }],
      messages: [{ role: 'user', content: [{ type: 'text', text: 'Hi', cache_control: { type: 'ephemeral' } }] }],
      ...SAMPLING,
      metadata: { user_id: 'u-1' },
      cache_control: { type: 'ephemeral' },
    });
    const plain = await client.messages.create({
      model: MODEL_ID,
      max_tokens: 64,
      system: 'Be brief.',
      messages: hi,
      ...SAMPLING,
    });
    expect(blocks.content).toEqual([{ type: 'text', text: DEFAULT_TINY_REPLY }]);
    expect(blocks.usage.input_tokens).toBe(plain.usage.input_tokens);
    const bare = await client.messages.create({ model: MODEL_ID, max_tokens: 64, messages: hi });
    expect(plain.usage.input_tokens).toBeGreaterThan(bare.usage.input_tokens); // the system prompt reached the template
  });

  it('count_tokens gives the prompt tokens a generation reports, without generating', async () => {
    const params = {
      model: MODEL_ID,
      system: 'Be brief.',
      messages: [
        ...hi,
        { role: 'assistant' as const, content: 'Hello.' },
        { role: 'user' as const, content: 'Again?' },
      ],
    };
    const counted = await client.messages.countTokens(params);
    const m = await client.messages.create({ ...params, max_tokens: 8 });
    expect(counted.input_tokens).toBe(m.usage.input_tokens);
    const withTools = await client.messages.countTokens({ ...params, tools: [WEATHER] });
    expect(withTools.input_tokens).toBeGreaterThan(counted.input_tokens);
    // count_tokens takes no generation settings
    const res = await post('messages/count_tokens', { ...params, max_tokens: 8 });
    expect(res.status).toBe(400);
    expect(await res.json()).toMatchObject({
      type: 'error',
      error: { type: 'invalid_request_error', param: 'max_tokens' },
    });
  });
});

describe('messages.stream', () => {
  it('delivers the named events in order and the final message', async () => {
    const stream = client.messages.stream({ model: MODEL_ID, max_tokens: 64, messages: hi });
    const types: string[] = [];
    let text = '';
    stream.on('streamEvent', (e) => types.push(e.type));
    stream.on('text', (t) => {
      text += t;
    });
    const final = await stream.finalMessage();
    expect(text).toBe(DEFAULT_TINY_REPLY);
    expect(final.content).toEqual([{ type: 'text', text: DEFAULT_TINY_REPLY }]);
    expect(final.stop_reason).toBe('end_turn');
    expect(final.usage.output_tokens).toBe(3);
    expect(final.usage.input_tokens).toBeGreaterThan(0); // from message_delta (message_start is sent before the prompt is counted)
    expect(types.slice(0, 3)).toEqual(['message_start', 'content_block_start', 'content_block_delta']);
    expect(types.slice(-3)).toEqual(['content_block_stop', 'message_delta', 'message_stop']);
  });

  it('is SSE with event: lines on the wire (x-api-key auth, any anthropic-version), ping included, no [DONE]', async () => {
    const res = await post(
      'messages',
      { model: MODEL_ID, max_tokens: 64, messages: hi, stream: true, stop_sequences: [' test'] },
      { 'x-api-key': hearth.key, 'anthropic-version': '2099-01-01' },
    );
    expect(res.status).toBe(200);
    expect(res.headers.get('content-type')).toMatch(/^text\/event-stream/);
    const body = await res.text();
    const events = body
      .trimEnd()
      .split('\n\n')
      .map((e) => {
        const [eventLine, dataLine] = e.split('\n');
        return {
          name: eventLine!.replace(/^event: /, ''),
          data: JSON.parse(dataLine!.replace(/^data: /, '')) as Record<string, unknown>,
        };
      });
    expect(events.map((e) => e.name)).toEqual(events.map((e) => e.data.type)); // each event's name is its data's type
    expect(events.slice(0, 3).map((e) => e.name)).toEqual(['message_start', 'ping', 'content_block_start']);
    expect(events.at(-1)!.name).toBe('message_stop');
    expect(events.find((e) => e.name === 'message_delta')!.data).toMatchObject({
      delta: { stop_reason: 'stop_sequence', stop_sequence: ' test' },
      usage: { output_tokens: 3 },
    });
    expect(body).not.toContain('[DONE]');
  });
});

describe('tools', () => {
  it("a forced tool call is a tool_use block with its input, stop_reason 'tool_use'", async () => {
    const m = await client.messages.create({
      model: MODEL_ID,
      max_tokens: 200,
      messages: [{ role: 'user', content: 'Weather in Paris?' }],
      tools: [WEATHER],
      tool_choice: { type: 'tool', name: 'get_weather', disable_parallel_tool_use: true },
      ...SAMPLING,
    });
    expect(m.stop_reason).toBe('tool_use');
    const use = m.content.find((b) => b.type === 'tool_use');
    expect(use).toMatchObject({ type: 'tool_use', name: 'get_weather' });
    expect(typeof (use as Anthropic.ToolUseBlock).id).toBe('string');
    expect(['Paris', 'Oslo']).toContain(((use as Anthropic.ToolUseBlock).input as { city: string }).city);
  });

  it('streams a forced call as input_json_delta, which the SDK assembles into the same input', async () => {
    const stream = client.messages.stream({
      model: MODEL_ID,
      max_tokens: 200,
      messages: [{ role: 'user', content: 'Weather?' }],
      tools: [WEATHER],
      tool_choice: { type: 'any', disable_parallel_tool_use: true },
      ...SAMPLING,
    });
    let json = '';
    stream.on('inputJson', (partial) => {
      json += partial;
    });
    const final = await stream.finalMessage();
    expect(final.stop_reason).toBe('tool_use');
    const uses = final.content.filter((b) => b.type === 'tool_use');
    expect(uses).toHaveLength(1);
    expect(JSON.parse(json)).toEqual((uses[0] as Anthropic.ToolUseBlock).input);
  });

  it('takes a history of tool_use and tool_result blocks', async () => {
    const m = await client.messages.create({
      model: MODEL_ID,
      max_tokens: 64,
      tools: [WEATHER],
      tool_choice: { type: 'none' },
      messages: [
        { role: 'user', content: 'Weather in Oslo?' },
        {
          role: 'assistant',
          content: [
            { type: 'text', text: 'Checking.' },
            { type: 'tool_use', id: 'toolu_1', name: 'get_weather', input: { city: 'Oslo' } },
          ],
        },
        {
          role: 'user',
          content: [
            { type: 'tool_result', tool_use_id: 'toolu_1', content: [{ type: 'text', text: '-3 C' }] },
            { type: 'text', text: 'Thanks!' },
          ],
        },
      ],
    });
    expect(m.stop_reason).toMatch(/^(end_turn|max_tokens)$/);
    expect(m.content.every((b) => b.type === 'text')).toBe(true);
  });
});

describe("errors in Anthropic's shape", () => {
  const expectError = async (res: Response, status: number, type: string, param?: string) => {
    expect(res.status).toBe(status);
    const body = (await res.json()) as { type: string; error: { type: string; message: string; param?: string } };
    expect(body.type).toBe('error');
    expect(body.error.type).toBe(type);
    expect(body.error.message.length).toBeGreaterThan(0);
    if (param !== undefined) expect(body.error.param).toBe(param);
  };

  it.each([
    [{ messages: hi }, 'max_tokens'],
    [{ max_tokens: 8 }, 'messages'],
    [{ max_tokens: 0, messages: hi }, 'max_tokens'],
    [{ max_tokens: 8, messages: [] }, 'messages'],
    [{ max_tokens: 8, messages: [{ role: 'system', content: 'x' }] }, 'messages[0].role'],
    [
      {
        max_tokens: 8,
        messages: [
          {
            role: 'user',
            content: [{ type: 'image', source: { type: 'base64', media_type: 'image/png', data: 'AA==' } }],
          },
        ],
      },
      'messages[0].content[0]',
    ],
    [{ max_tokens: 8, messages: [...hi, { role: 'assistant', content: 'Sure, ' }] }, 'messages[1]'],
    [{ max_tokens: 8, messages: hi, temperature: 1.5 }, 'temperature'],
    [{ max_tokens: 8, messages: hi, top_k: -1 }, 'top_k'],
    [{ max_tokens: 8, messages: hi, stop_sequences: 'x' }, 'stop_sequences'],
    [{ max_tokens: 8, messages: hi, system: 5 }, 'system'],
    [{ max_tokens: 8, messages: hi, tools: [{ type: 'web_search_20250305', name: 'web_search' }] }, 'tools[0].type'],
    [{ max_tokens: 8, messages: hi, tools: [WEATHER], tool_choice: { type: 'tool', name: 'nope' } }, 'tool_choice'],
    [{ max_tokens: 8, messages: hi, thinking: { type: 'enabled', budget_tokens: 1024 } }, 'thinking'],
    [{ max_tokens: 8, messages: hi, n: 2 }, 'n'],
  ])('%j -> 400 invalid_request_error naming %s', async (body, param) => {
    await expectError(await post('messages', { model: MODEL_ID, ...body }), 400, 'invalid_request_error', param);
  });

  it('the SDK raises its typed errors from these bodies', async () => {
    await expect(client.messages.create({ model: 'local/other', max_tokens: 8, messages: hi })).rejects.toBeInstanceOf(
      Anthropic.NotFoundError,
    );
    await expect(
      client.messages.create({ model: MODEL_ID, max_tokens: 8, messages: hi, ...({ temperature: 3 } as object) }),
    ).rejects.toBeInstanceOf(Anthropic.BadRequestError);
    const wrongKey = new Anthropic({ apiKey: 'hk_nope', baseURL: `${hearth.baseUrl}/api/inference`, maxRetries: 0 });
    const err = await wrongKey.messages
      .create({ model: MODEL_ID, max_tokens: 8, messages: hi })
      .catch((e: unknown) => e);
    expect(err).toBeInstanceOf(Anthropic.AuthenticationError);
    expect((err as InstanceType<typeof Anthropic.AuthenticationError>).error).toMatchObject({
      type: 'error',
      error: { type: 'authentication_error' },
    });
  });

  it('no key, malformed JSON, unknown model and wrong method are answered in the same shape', async () => {
    await expectError(
      await post('messages', { model: MODEL_ID, max_tokens: 8, messages: hi }, {}),
      401,
      'authentication_error',
    );
    await expectError(
      await post('messages/count_tokens', { model: MODEL_ID, messages: hi }, {}),
      401,
      'authentication_error',
    );
    await expectError(await post('messages', '{"model":'), 400, 'invalid_request_error');
    await expectError(
      await post('messages', { model: 'local/other', max_tokens: 8, messages: hi, stream: true }),
      404,
      'not_found_error',
    );
    await expectError(
      await fetch(`${hearth.baseUrl}/api/inference/v1/messages`, { headers: { 'x-api-key': hearth.key } }),
      405,
      'invalid_request_error',
    );
  });

  it("an unknown path under /messages (the Message Batches API) is a 404 in Anthropic's shape, the SDK's NotFoundError", async () => {
    for (const path of ['messages/batches', 'messages/count_tokens/x', 'messages/']) {
      await expectError(await post(path, { requests: [] }), 404, 'not_found_error');
    }
    // Static paths still win over the subtree's catch-all.
    expect((await post('messages/count_tokens', { model: MODEL_ID, messages: hi })).status).toBe(200);
    const list = (client.messages as unknown as { batches: { list(): Promise<unknown> } }).batches.list();
    await expect(list).rejects.toBeInstanceOf(Anthropic.NotFoundError);
    // Outside it, the service's own shape.
    const other = await post('nothing-here', {});
    expect(other.status).toBe(404);
    expect(((await other.json()) as { type?: string }).type).toBeUndefined();
  });

  it('takes the key as Authorization: Bearer too', async () => {
    const res = await post(
      'messages',
      { model: MODEL_ID, max_tokens: 8, messages: hi },
      { authorization: `Bearer ${hearth.key}` },
    );
    expect(res.status).toBe(200);
    expect(((await res.json()) as { type: string }).type).toBe('message');
  });
});
