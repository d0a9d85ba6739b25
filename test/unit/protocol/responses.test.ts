import { ResponseStream } from 'openai/lib/responses/ResponseStream';
import { describe, expect, it } from 'vitest';
import type { ChatDelta } from '../../../src/protocol/chat-delta.ts';
import { type ResponseEvent, ResponseRenderer } from '../../../src/protocol/responses-events.ts';
import { validateResponsesRequest } from '../../../src/protocol/responses-request.ts';
import { ApiError } from '../../../src/errors/index.ts';
import { expectParamRefusal, thrownBy } from '../../helpers/thrown.ts';
import { tokenLogprob, wireLogprob } from '../../helpers/token-logprobs.ts';

const fail = (body: unknown) => thrownBy(() => validateResponsesRequest(body), ApiError);

describe('validateResponsesRequest', () => {
  it('maps text input and instructions', () => {
    const r = validateResponsesRequest({
      model: 'local/m',
      input: 'Hi',
      instructions: 'Be terse.',
      max_output_tokens: 20,
      temperature: 0.2,
    });
    expect(r.chat).toMatchObject({
      model: 'local/m',
      stream: false,
      maxTokens: 20,
      temperature: 0.2,
      tools: [],
      toolChoice: 'none',
      responseFormat: { type: 'text' },
    });
    expect(r.chat.messages).toEqual([
      { role: 'system', content: 'Be terse.' },
      { role: 'user', content: 'Hi' },
    ]);
    expect(r.echo).toMatchObject({ instructions: 'Be terse.', max_output_tokens: 20 });
  });

  it("reasoning.effort becomes the chat request's reasoning effort", () => {
    expect(
      validateResponsesRequest({ model: 'm', input: 'x', reasoning: { effort: 'none' } }).chat.reasoningEffort,
    ).toBe('none');
    expect(validateResponsesRequest({ model: 'm', input: 'x', reasoning: {} }).chat.reasoningEffort).toBeUndefined();
  });

  it('store defaults to true; previous_response_id is carried; instructions stay apart from the input', () => {
    const r = validateResponsesRequest({
      model: 'local/m',
      input: 'Hi',
      instructions: 'Be terse.',
      previous_response_id: 'resp_1',
    });
    expect([r.store, r.previousResponseId, r.echo.store, r.echo.previous_response_id]).toEqual([
      true,
      'resp_1',
      true,
      'resp_1',
    ]);
    expect(r.instructionMessages).toEqual([{ role: 'system', content: 'Be terse.' }]);
    expect(r.inputMessages).toEqual([{ role: 'user', content: 'Hi' }]);
    expect(r.inputItems).toEqual([
      {
        id: expect.stringMatching(/^msg_[0-9a-f]{48}$/),
        type: 'message',
        role: 'user',
        content: [{ type: 'input_text', text: 'Hi' }],
      },
    ]);
    expect(validateResponsesRequest({ model: 'local/m', input: 'Hi', store: false }).store).toBe(false);
  });

  it('input items keep a client id, make one otherwise, and record calls and their outputs', () => {
    const r = validateResponsesRequest({
      model: 'local/m',
      input: [
        { id: 'msg_mine', role: 'user', content: [{ type: 'input_text', text: 'Q' }] },
        { type: 'function_call', call_id: 'c1', name: 'f', arguments: '{}' },
        { type: 'function_call_output', call_id: 'c1', output: 'ok' },
      ],
    });
    expect(r.inputItems.map((i) => [i.id.replace(/_[0-9a-f]{48}$/, '_*'), i.type])).toEqual([
      ['msg_mine', 'message'],
      ['fc_*', 'function_call'],
      ['fco_*', 'function_call_output'],
    ]);
    expect(r.inputItems[1]).toMatchObject({ call_id: 'c1', name: 'f', arguments: '{}' });
    expect(r.inputItems[2]).toMatchObject({ call_id: 'c1', output: 'ok' });
  });

  it('maps multi-turn items with function calls and their outputs', () => {
    const r = validateResponsesRequest({
      model: 'local/m',
      input: [
        { role: 'user', content: 'Weather in Oslo and Lima?' },
        { type: 'message', role: 'assistant', content: [{ type: 'output_text', text: 'Checking.', annotations: [] }] },
        {
          type: 'function_call',
          call_id: 'call_a',
          name: 'get_weather',
          arguments: '{"city":"Oslo"}',
          id: 'fc_1',
          status: 'completed',
        },
        { type: 'function_call', call_id: 'call_b', name: 'get_weather', arguments: '{"city":"Lima"}' },
        { type: 'function_call_output', call_id: 'call_a', output: '-3C' },
        { type: 'function_call_output', call_id: 'call_b', output: [{ type: 'input_text', text: '18C' }] },
        { role: 'developer', content: [{ type: 'input_text', text: 'Answer in one line.' }] },
      ],
      tools: [
        {
          type: 'function',
          name: 'get_weather',
          parameters: { type: 'object', properties: { city: { type: 'string' } }, required: ['city'] },
        },
      ],
    });
    expect(r.chat.messages).toEqual([
      { role: 'user', content: 'Weather in Oslo and Lima?' },
      {
        role: 'assistant',
        content: 'Checking.',
        toolCalls: [
          { id: 'call_a', name: 'get_weather', arguments: '{"city":"Oslo"}' },
          { id: 'call_b', name: 'get_weather', arguments: '{"city":"Lima"}' },
        ],
      },
      { role: 'tool', toolCallId: 'call_a', content: '-3C' },
      { role: 'tool', toolCallId: 'call_b', content: '18C' },
      { role: 'system', content: 'Answer in one line.' },
    ]);
    expect(r.chat.tools[0]).toMatchObject({ name: 'get_weather', strict: true });
    expect(r.chat.toolChoice).toBe('auto');
  });

  it('maps text.format json_schema, tool_choice and logprobs', () => {
    const r = validateResponsesRequest({
      model: 'local/m',
      input: 'x',
      stream: true,
      text: { format: { type: 'json_schema', name: 'out', schema: { type: 'object' }, strict: true } },
      tools: [{ type: 'function', name: 'f', strict: false }],
      tool_choice: { type: 'function', name: 'f' },
      parallel_tool_calls: false,
      include: ['message.output_text.logprobs'],
      top_logprobs: 2,
      store: false,
    });
    expect(r.chat).toMatchObject({
      stream: true,
      responseFormat: { type: 'json_schema', name: 'out', schema: { type: 'object' }, strict: true },
      toolChoice: { name: 'f' },
      parallelToolCalls: false,
      topLogprobs: 2,
    });
    expect(r.chat.tools[0]!.strict).toBe(false);
    expect(r.includeLogprobs).toBe(true);
    expect(r.echo.tool_choice).toEqual({ type: 'function', name: 'f' });
  });

  it.each([
    [{ model: 'm', input: 'x', previous_response_id: 7 }, 'previous_response_id', 'invalid_value'],
    [{ model: 'm', input: 'x', previous_response_id: 'r'.repeat(129) }, 'previous_response_id', 'invalid_value'],
    [{ model: 'm', input: 'x', store: 'yes' }, 'store', 'invalid_type'],
    [{ model: 'm', input: 'x', conversation: 'conv_1' }, 'conversation', 'unsupported_parameter'],
    [{ model: 'm', input: 'x', background: true }, 'background', 'unsupported_parameter'],
    [{ model: 'm', input: 'x', mystery: 1 }, 'mystery', 'unknown_parameter'],
    [{ model: 'm' }, 'input', 'missing_required_parameter'],
    [{ input: 'x' }, 'model', 'missing_required_parameter'],
    [{ model: 'm', input: [{ type: 'web_search_call', id: 'ws_1' }] }, 'input[0].type', 'invalid_value'],
    [
      { model: 'm', input: [{ role: 'user', content: [{ type: 'input_image', image_url: 'x' }] }] },
      'input[0].content[0]',
      'unsupported_content_part',
    ],
    [{ model: 'm', input: [{ type: 'function_call_output', output: 'x' }] }, 'input[0].call_id', 'invalid_type'],
    [{ model: 'm', input: 'x', tools: [{ type: 'web_search' }] }, 'tools[0].type', 'unsupported_parameter'],
    [{ model: 'm', input: 'x', tool_choice: 'required' }, 'tool_choice', 'invalid_value'],
    [
      { model: 'm', input: 'x', text: { format: { type: 'json_schema', name: 'o' } } },
      'text.format.schema',
      'missing_required_parameter',
    ],
    [{ model: 'm', input: 'x', include: ['file_search_call.results'] }, 'include[0]', 'unsupported_parameter'],
    [{ model: 'm', input: 'x', max_output_tokens: 0 }, 'max_output_tokens', 'invalid_value'],
    [{ model: 'm', input: 'x', top_logprobs: 21 }, 'top_logprobs', 'invalid_value'],
    [{ model: 'm', input: 'x', reasoning: { summary: 'auto' } }, 'reasoning.summary', 'unsupported_parameter'],
    [{ model: 'm', input: 'x', reasoning: { effort: 'extreme' } }, 'reasoning.effort', 'invalid_value'],
    [{ model: 'm', input: 'x', reasoning: 'high' }, 'reasoning', 'invalid_type'],
  ])('rejects %j naming %s', (body, param, code) => {
    expectParamRefusal(fail(body), param, code);
  });
});

const ECHO = validateResponsesRequest({ model: 'local/m', input: 'x' }).echo;

/** Renders deltas and feeds the events to the official SDK's stream accumulator (which validates them). */
async function throughSdk(deltas: ChatDelta[], withLogprobs = false) {
  const r = new ResponseRenderer('local/m', ECHO, withLogprobs);
  const events: ResponseEvent[] = [...r.start(), ...deltas.flatMap((d) => r.push(d))];
  const body = new ReadableStream({
    start(c) {
      for (const e of events) c.enqueue(new TextEncoder().encode(`${JSON.stringify(e)}\n`));
      c.close();
    },
  });
  const stream = ResponseStream.fromReadableStream(body);
  const seen: string[] = [];
  stream.on('event', (e) => seen.push(e.type));
  const final = await stream.finalResponse();
  return { events, final, seen, rendered: r.response() };
}

describe('ResponseRenderer', () => {
  it('a text answer: the exact event sequence, accumulated by the SDK into the same Response', async () => {
    const { events, final, rendered } = await throughSdk([
      { type: 'content', text: 'Hello' },
      { type: 'content', text: ', world' },
      { type: 'finish', reason: 'stop', usage: { promptTokens: 5, completionTokens: 2 } },
    ]);
    expect(events.map((e) => e.type)).toEqual([
      'response.created',
      'response.in_progress',
      'response.output_item.added',
      'response.content_part.added',
      'response.output_text.delta',
      'response.output_text.delta',
      'response.output_text.done',
      'response.content_part.done',
      'response.output_item.done',
      'response.completed',
    ]);
    expect(events.map((e) => e.sequence_number)).toEqual(events.map((_, i) => i));
    expect(final.output_text).toBe('Hello, world');
    expect(final.status).toBe('completed');
    expect(final.usage).toMatchObject({ input_tokens: 5, output_tokens: 2, total_tokens: 7 });
    expect(final.id).toMatch(/^resp_/);
    expect(rendered).toMatchObject({
      object: 'response',
      status: 'completed',
      output: [
        {
          type: 'message',
          role: 'assistant',
          status: 'completed',
          content: [{ type: 'output_text', text: 'Hello, world', annotations: [] }],
        },
      ],
    });
  });

  it('function calls: item per call, argument deltas, done with the whole arguments', async () => {
    const { events, final } = await throughSdk([
      { type: 'tool_call', index: 0, id: 'call_1', name: 'get_weather', arguments: '' },
      { type: 'tool_call', index: 0, arguments: '{"city":' },
      { type: 'tool_call', index: 0, arguments: '"Oslo"}' },
      { type: 'tool_call', index: 1, id: 'call_2', name: 'get_time', arguments: '' },
      { type: 'tool_call', index: 1, arguments: '{"zone":"UTC"}' },
      { type: 'finish', reason: 'tool_calls', usage: { promptTokens: 9, completionTokens: 30 } },
    ]);
    expect(events.map((e) => e.type)).toEqual([
      'response.created',
      'response.in_progress',
      'response.output_item.added',
      'response.function_call_arguments.delta',
      'response.function_call_arguments.delta',
      'response.function_call_arguments.done',
      'response.output_item.done',
      'response.output_item.added',
      'response.function_call_arguments.delta',
      'response.function_call_arguments.done',
      'response.output_item.done',
      'response.completed',
    ]);
    expect(final.output).toEqual([
      expect.objectContaining({
        type: 'function_call',
        call_id: 'call_1',
        name: 'get_weather',
        arguments: '{"city":"Oslo"}',
        status: 'completed',
      }),
      expect.objectContaining({
        type: 'function_call',
        call_id: 'call_2',
        name: 'get_time',
        arguments: '{"zone":"UTC"}',
        status: 'completed',
      }),
    ]);
  });

  it('text then a call; a length finish is incomplete (max_output_tokens)', async () => {
    const { events, rendered } = await throughSdkIncomplete();
    expect(events.at(-1)!.type).toBe('response.incomplete');
    expect(rendered).toMatchObject({ status: 'incomplete', incomplete_details: { reason: 'max_output_tokens' } });
    expect((rendered.output as unknown[]).length).toBe(2);
  });

  it('logprobs ride on the text deltas and the final part', async () => {
    const lp = tokenLogprob('Hi', -0.5, [
      ['Hi', -0.5],
      ['Yo', -1.5],
    ]);
    const { final } = await throughSdk(
      [
        { type: 'content', text: 'Hi', logprobs: [lp] },
        { type: 'finish', reason: 'stop' },
      ],
      true,
    );
    const part = (final.output[0] as { content: Array<{ logprobs: unknown[] }> }).content[0]!;
    expect(part.logprobs).toEqual([wireLogprob(lp)]);
  });
});

async function throughSdkIncomplete() {
  const r = new ResponseRenderer('local/m', ECHO, false);
  const events: ResponseEvent[] = [
    ...r.start(),
    ...r.push({ type: 'content', text: 'Let me look.' }),
    ...r.push({ type: 'tool_call', index: 0, id: 'call_9', name: 'f', arguments: '{"a":' }),
    ...r.push({ type: 'finish', reason: 'length' }),
  ];
  return { events, rendered: r.response() };
}
