import { createOpenAICompatible } from '@ai-sdk/openai-compatible';
import { generateObject } from 'ai';
import { Ajv2020 } from 'ajv/dist/2020.js';
import OpenAI from 'openai';
import { zodResponseFormat } from 'openai/helpers/zod';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { z } from 'zod';
import { type HearthProcess, startHearthProcess } from '../../helpers/hearth-process.ts';
import { serveModel } from '../../helpers/served-model.ts';
import { STRICT_WEATHER_TOOL } from '../../helpers/tool-fixtures.ts';
import { ensureTinyChatModel } from '../../../models/test-model-path.ts';

/**
 * Structured outputs and forced function calls end to end over a real `hearth serve` on the tiny chat model,
 * whose weights are random for any prompt it was not scripted for: every reply here is valid only because
 * the engine samples under the grammar Hearth built from the schema. (Needs the engine's grammar support.)
 * Free-text strings are bounded (maxLength, counted in characters): the model's byte tokens can write any
 * character, and the engine keeps the bytes valid UTF-8, so the text has no U+FFFD and the length holds.
 */
let hearth: HearthProcess;
let client: OpenAI;
const MODEL_ID = 'local/tiny-chat';
const MAX_TOKENS = 200;

const Weather = z.object({
  city: z.enum(['Paris', 'Oslo', 'Lima']),
  celsius: z.number().int().min(-30).max(45),
  sunny: z.boolean(),
  tags: z.array(z.enum(['windy', 'humid', 'dry'])).max(2),
  note: z.enum(['ok', 'meh']).nullable(),
});
/**
 * Weather with a free-text summary, as plain JSON Schema checked by ajv: JSON Schema counts a string's length
 * in characters, as the grammar does, while zod's .max() counts UTF-16 units (a character beyond U+FFFF is two).
 */
const WEATHER_REPORT = (() => {
  const base = z.toJSONSchema(Weather) as { properties: Record<string, unknown>; required: string[] } & Record<
    string,
    unknown
  >;
  return {
    ...base,
    properties: { ...base.properties, summary: { type: 'string', minLength: 1, maxLength: 16 } },
    required: [...base.required, 'summary'],
  };
})();
const validReport = new Ajv2020({ strict: false }).compile(WEATHER_REPORT);

const TIME_TOOL = {
  type: 'function' as const,
  function: {
    name: 'get_time',
    parameters: {
      type: 'object',
      properties: { zone: { type: 'string', minLength: 1, maxLength: 8 } },
      required: ['zone'],
      additionalProperties: false,
    },
    strict: true,
  },
};
/** Both functions as the Responses API declares them. */
const RESPONSES_TOOLS = [STRICT_WEATHER_TOOL, TIME_TOOL].map((t) => ({
  type: 'function' as const,
  name: t.function.name,
  parameters: t.function.parameters,
  strict: true,
}));

beforeAll(async () => {
  ({ hearth, client } = await serveModel(MODEL_ID));
});
afterAll(() => hearth?.stop());

const ask = [{ role: 'user' as const, content: 'What is the weather in Oslo? Answer as JSON.' }];

describe('response_format', () => {
  it('chat.completions.parse with a zod schema (json_schema, strict) returns a parsed, valid object', async () => {
    const r = await client.chat.completions.parse({
      model: MODEL_ID,
      messages: ask,
      response_format: zodResponseFormat(Weather, 'weather'),
      max_tokens: MAX_TOKENS,
      seed: 1,
    });
    const choice = r.choices[0]!;
    expect(choice.finish_reason).toBe('stop');
    expect(choice.message.content).not.toContain('\uFFFD');
    expect(Weather.safeParse(choice.message.parsed).success, choice.message.content ?? '').toBe(true);
  });

  it('streams a json_schema answer with a free-text string whose concatenated content validates', async () => {
    const stream = await client.chat.completions.create({
      model: MODEL_ID,
      messages: ask,
      stream: true,
      max_tokens: MAX_TOKENS,
      seed: 7,
      response_format: { type: 'json_schema', json_schema: { name: 'weather', schema: WEATHER_REPORT, strict: true } },
    });
    let text = '';
    let finish: string | null = null;
    for await (const c of stream) {
      text += c.choices[0]?.delta.content ?? '';
      finish = c.choices[0]?.finish_reason ?? finish;
    }
    expect(finish).toBe('stop');
    expect(text).not.toContain('\uFFFD');
    expect(validReport(JSON.parse(text)), text).toBe(true);
  });

  it('AI SDK generateObject (openai-compatible provider with structured outputs)', async () => {
    const provider = createOpenAICompatible({
      name: 'hearth',
      baseURL: `${hearth.baseUrl}/api/inference/v1`,
      apiKey: hearth.key,
      supportsStructuredOutputs: true,
    });
    const { object } = await generateObject({
      model: provider(MODEL_ID),
      schema: Weather,
      prompt: 'Weather in Lima?',
      maxOutputTokens: MAX_TOKENS,
      seed: 5,
      maxRetries: 0,
    });
    expect(Weather.safeParse(object).success).toBe(true);
  });
});

describe('json_object', () => {
  // Any JSON object has unbounded strings, which random weights do not close within max_tokens; this model's
  // scripted reply is JSON, so the test shows a model's own valid JSON passes through the grammar unchanged
  // (that the grammar constrains is what the json_schema tests above show).
  const JSON_REPLY = '{"mood": "calm", "score": 3}';
  let jsonHearth: HearthProcess;

  beforeAll(async () => {
    jsonHearth = await startHearthProcess({
      args: ['--model', await ensureTinyChatModel({ reply: JSON_REPLY }), '--model-id', MODEL_ID, '--slots', '1'],
    });
    await jsonHearth.waitReady();
  });

  afterAll(async () => {
    await jsonHearth?.stop();
  });

  it('answers a JSON object, JSON and streaming', async () => {
    const c = new OpenAI({ apiKey: jsonHearth.key, baseURL: `${jsonHearth.baseUrl}/api/inference/v1`, maxRetries: 0 });
    const request = {
      model: MODEL_ID,
      messages: ask,
      response_format: { type: 'json_object' as const },
      max_tokens: MAX_TOKENS,
      temperature: 0,
    };
    const r = await c.chat.completions.create(request);
    expect(r.choices[0]!.finish_reason).toBe('stop');
    expect(JSON.parse(r.choices[0]!.message.content!)).toEqual({ mood: 'calm', score: 3 });
    const stream = await c.chat.completions.create({ ...request, stream: true });
    let text = '';
    for await (const chunk of stream) text += chunk.choices[0]?.delta.content ?? '';
    expect(JSON.parse(text)).toEqual({ mood: 'calm', score: 3 });
  });
});

describe('Responses API: text.format and forced function calls', () => {
  it('responses.create with text.format json_schema (a free-text string included)', async () => {
    const r = await client.responses.create({
      model: MODEL_ID,
      input: 'Weather in Paris?',
      max_output_tokens: MAX_TOKENS,
      text: { format: { type: 'json_schema', name: 'weather', schema: WEATHER_REPORT, strict: true } },
    });
    expect(r.status).toBe('completed');
    expect(r.output_text).not.toContain('\uFFFD');
    expect(validReport(JSON.parse(r.output_text)), r.output_text).toBe(true);
  });

  it('responses.stream with tool_choice required yields function_call items for declared functions', async () => {
    const stream = client.responses.stream({
      model: MODEL_ID,
      input: 'Weather in Oslo?',
      tools: RESPONSES_TOOLS,
      tool_choice: 'required',
      parallel_tool_calls: false,
      max_output_tokens: MAX_TOKENS,
    });
    const argDeltas: string[] = [];
    stream.on('response.function_call_arguments.delta', (e) => argDeltas.push(e.delta));
    const final = await stream.finalResponse();
    expect(final.status).toBe('completed');
    const calls = final.output.filter((o) => o.type === 'function_call');
    expect(calls.length).toBe(1);
    const call = calls[0] as { name: string; arguments: string; call_id: string };
    expect(['get_weather', 'get_time']).toContain(call.name);
    expect(call.call_id).toMatch(/^call_/);
    expect(argDeltas.join('')).toBe(call.arguments);
    expect(call.arguments).not.toContain('\uFFFD');
    const declared = [STRICT_WEATHER_TOOL, TIME_TOOL].find((t) => t.function.name === call.name)!;
    const validate = new Ajv2020({ strict: false }).compile(declared.function.parameters);
    expect(validate(JSON.parse(call.arguments)), call.arguments).toBe(true);
  });

  it('a named function in a multi-turn conversation with function_call_output', async () => {
    const r = await client.responses.create({
      model: MODEL_ID,
      max_output_tokens: MAX_TOKENS,
      tools: RESPONSES_TOOLS,
      tool_choice: { type: 'function', name: 'get_time' },
      // One call: with parallel calls the grammar repeats calls without bound, so random weights may run
      // into max_output_tokens mid-call (this API takes no seed).
      parallel_tool_calls: false,
      input: [
        { role: 'user', content: 'Weather in Oslo, then the time there?' },
        { type: 'function_call', call_id: 'call_prev', name: 'get_weather', arguments: '{"city":"Oslo","unit":"c"}' },
        { type: 'function_call_output', call_id: 'call_prev', output: '{"celsius": -3}' },
      ],
    });
    expect(r.status).toBe('completed');
    const calls = r.output.filter((o) => o.type === 'function_call') as Array<{ name: string; arguments: string }>;
    expect(calls.length).toBe(1);
    const validate = new Ajv2020({ strict: false }).compile(TIME_TOOL.function.parameters);
    for (const c of calls) {
      expect(c.name).toBe('get_time');
      expect(c.arguments).not.toContain('\uFFFD');
      expect(validate(JSON.parse(c.arguments)), c.arguments).toBe(true);
    }
  });
});
