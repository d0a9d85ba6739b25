import { createOpenAICompatible } from '@ai-sdk/openai-compatible';
import { generateText, jsonSchema, tool } from 'ai';
import { Ajv2020 } from 'ajv/dist/2020.js';
import OpenAI from 'openai';
import type { ChatCompletionMessageParam, ChatCompletionTool } from 'openai/resources/chat/completions';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { DEFAULT_TINY_REPLY } from '../../../models/tiny-llama.ts';
import type { HearthProcess } from '../../helpers/hearth-process.ts';
import { serveModel } from '../../helpers/served-model.ts';
import { STRICT_WEATHER_TOOL } from '../../helpers/tool-fixtures.ts';

/**
 * Chat-completions tool calls and logprobs end to end with the official SDK and the AI SDK, over a real
 * `hearth serve` on the tiny chat model. `required` and named choices are grammar-forced, so even these random
 * weights return well-formed calls to declared functions. (Needs the engine's grammar and logprobs support and
 * the ChatDelta responder that renders tool_calls and logprobs.)
 */
let hearth: HearthProcess;
let client: OpenAI;
const MODEL_ID = 'local/tiny-chat';
const MAX_TOKENS = 200;

const TOOLS: ChatCompletionTool[] = [
  STRICT_WEATHER_TOOL,
  {
    type: 'function',
    function: {
      name: 'get_time',
      parameters: {
        type: 'object',
        properties: { zone: { type: 'string', enum: ['UTC', 'CET', 'JST'] } },
        required: ['zone'],
        additionalProperties: false,
      },
      strict: true,
    },
  },
];
const validators = new Map(
  TOOLS.map((t) => [
    t.type === 'function' ? t.function.name : '',
    new Ajv2020({ strict: false }).compile(t.type === 'function' ? t.function.parameters! : {}),
  ]),
);

function expectValidCall(
  call: { type: string; id: string; function?: { name: string; arguments: string } },
  names = ['get_weather', 'get_time'],
) {
  expect(call.type).toBe('function');
  expect(call.id).toMatch(/^call_/);
  expect(names).toContain(call.function!.name);
  const validate = validators.get(call.function!.name)!;
  expect(validate(JSON.parse(call.function!.arguments)), call.function!.arguments).toBe(true);
}

beforeAll(async () => {
  ({ hearth, client } = await serveModel(MODEL_ID));
});
afterAll(() => hearth?.stop());

const question: ChatCompletionMessageParam[] = [{ role: 'user', content: 'What is the weather in Paris?' }];
/** The weather question with both tools declared: each test adds its tool_choice. */
const ASKED_WITH_TOOLS = { model: MODEL_ID, messages: question, tools: TOOLS, max_tokens: MAX_TOKENS };
/** A short chat ('Hi'): the tiny model answers it with its script, DEFAULT_TINY_REPLY. */
const SAID_HI = { model: MODEL_ID, messages: [{ role: 'user', content: 'Hi' }] as ChatCompletionMessageParam[] };

describe('tool calls (official SDK)', () => {
  it("tool_choice 'required': well-formed calls to declared functions, finish_reason tool_calls", async () => {
    const r = await client.chat.completions.create({ ...ASKED_WITH_TOOLS, tool_choice: 'required', seed: 1 });
    const choice = r.choices[0]!;
    expect(choice.finish_reason).toBe('tool_calls');
    expect(choice.message.tool_calls!.length).toBeGreaterThanOrEqual(1);
    for (const c of choice.message.tool_calls!) expectValidCall(c as never);
  });

  it('a named function, parallel_tool_calls false: exactly that one call', async () => {
    const r = await client.chat.completions.create({
      ...ASKED_WITH_TOOLS,
      tool_choice: { type: 'function', function: { name: 'get_time' } },
      parallel_tool_calls: false,
    });
    expect(r.choices[0]!.finish_reason).toBe('tool_calls');
    expect(r.choices[0]!.message.tool_calls!.length).toBe(1);
    expectValidCall(r.choices[0]!.message.tool_calls![0] as never, ['get_time']);
  });

  it('a manual tool loop: call, answer with tool messages, then a plain reply', async () => {
    const messages: ChatCompletionMessageParam[] = [...question];
    const first = await client.chat.completions.create({
      ...ASKED_WITH_TOOLS,
      messages,
      tool_choice: 'required',
      parallel_tool_calls: false,
    });
    const msg = first.choices[0]!.message;
    messages.push(msg);
    for (const call of msg.tool_calls!)
      messages.push({ role: 'tool', tool_call_id: call.id, content: JSON.stringify({ ok: true, celsius: 21 }) });
    const second = await client.chat.completions.create({
      ...ASKED_WITH_TOOLS,
      messages,
      tool_choice: 'none',
      max_tokens: 20,
    });
    expect(second.choices[0]!.message.tool_calls ?? []).toEqual([]);
    expect(typeof second.choices[0]!.message.content).toBe('string');
  });

  it('streams delta.tool_calls as OpenAI does (index, id and name first, then arguments)', async () => {
    const stream = await client.chat.completions.create({
      ...ASKED_WITH_TOOLS,
      tool_choice: 'required',
      parallel_tool_calls: false,
      stream: true,
      seed: 3,
    });
    const calls: Array<{ id: string; name: string; args: string }> = [];
    let finish: string | null = null;
    for await (const chunk of stream) {
      const d = chunk.choices[0]?.delta;
      finish = chunk.choices[0]?.finish_reason ?? finish;
      for (const tc of d?.tool_calls ?? []) {
        if (tc.id !== undefined) {
          expect(tc.index).toBe(calls.length);
          expect(tc.function?.name).toBeTypeOf('string');
          calls.push({ id: tc.id, name: tc.function!.name!, args: tc.function?.arguments ?? '' });
        } else {
          expect(tc.index).toBe(calls.length - 1);
          calls[tc.index]!.args += tc.function?.arguments ?? '';
        }
      }
    }
    expect(finish).toBe('tool_calls');
    expect(calls.length).toBeGreaterThanOrEqual(1);
    for (const c of calls)
      expectValidCall({ type: 'function', id: c.id, function: { name: c.name, arguments: c.args } });
  });

  it("'auto' with the scripted reply: plain content, no calls", async () => {
    const r = await client.chat.completions.create({ ...SAID_HI, tools: TOOLS, max_tokens: 20 });
    expect(r.choices[0]!.finish_reason).toBe('stop');
    expect(r.choices[0]!.message.content).toBe(DEFAULT_TINY_REPLY);
  });
});

describe('AI SDK tool call', () => {
  it('generateText with a required tool returns a typed call', async () => {
    const provider = createOpenAICompatible({
      name: 'hearth',
      baseURL: `${hearth.baseUrl}/api/inference/v1`,
      apiKey: hearth.key,
    });
    const result = await generateText({
      model: provider(MODEL_ID),
      prompt: 'Weather in Lima?',
      tools: {
        get_weather: tool({
          description: 'Current weather in a city',
          inputSchema: jsonSchema<{ city: string; unit: string }>(STRICT_WEATHER_TOOL.function.parameters as never),
        }),
      },
      toolChoice: 'required',
      maxOutputTokens: MAX_TOKENS,
      maxRetries: 0,
    });
    expect(result.toolCalls.length).toBeGreaterThanOrEqual(1);
    expect(result.toolCalls[0]!.toolName).toBe('get_weather');
    expect(['Paris', 'Oslo', 'Lima']).toContain((result.toolCalls[0]!.input as { city: string }).city);
  });
});

describe('logprobs', () => {
  it('JSON: one entry per completion token, with top_logprobs alternatives', async () => {
    const r = await client.chat.completions.create({ ...SAID_HI, logprobs: true, top_logprobs: 3, temperature: 0 });
    const content = r.choices[0]!.logprobs!.content!;
    expect(content.length).toBe(r.usage!.completion_tokens);
    expect(content.map((c) => c.token).join('')).toBe(r.choices[0]!.message.content);
    for (const c of content) {
      expect(c.logprob).toBeLessThanOrEqual(0);
      expect(c.top_logprobs.length).toBe(3);
      expect(c.bytes).toEqual([...Buffer.from(c.token)]);
    }
  });

  it('streaming: logprobs ride on the content chunks', async () => {
    const stream = await client.chat.completions.create({ ...SAID_HI, logprobs: true, top_logprobs: 2, stream: true });
    let tokens = 0;
    let text = '';
    for await (const c of stream) {
      text += c.choices[0]?.delta.content ?? '';
      for (const l of c.choices[0]?.logprobs?.content ?? []) {
        tokens++;
        expect(l.top_logprobs.length).toBe(2);
      }
    }
    expect(text).toBe(DEFAULT_TINY_REPLY);
    expect(tokens).toBe(3);
  });
});
