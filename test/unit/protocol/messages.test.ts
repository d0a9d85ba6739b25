import { describe, expect, it } from 'vitest';
import { ApiError } from '../../../src/errors/api-error.ts';
import { anthropicErrorBody } from '../../../src/errors/anthropic-error-body.ts';
import { invalidRequest, modelWarmingUp, unauthorized } from '../../../src/errors/index.ts';
import type { ChatDelta } from '../../../src/protocol/chat-delta.ts';
import { MessageRenderer } from '../../../src/protocol/messages-events.ts';
import { validateMessagesRequest } from '../../../src/protocol/messages-request.ts';
import { thrownBy } from '../../helpers/thrown.ts';

/** The Messages API's pure parts: request -> ChatRequest, ChatDeltas -> message / events, errors -> Anthropic's shape. */

const base = { model: 'local/m', max_tokens: 16 };

describe('validateMessagesRequest', () => {
  it('turns system, text blocks, tool_use and tool_result into the chat messages the template renders', () => {
    const { chat } = validateMessagesRequest({
      ...base,
      system: [
        { type: 'text', text: 'Be brief.' },
        { type: 'text', text: 'Be kind.' },
      ],
      messages: [
        {
          role: 'user',
          content: [
            { type: 'text', text: 'Weather ' },
            { type: 'text', text: 'in Oslo?' },
          ],
        },
        {
          role: 'assistant',
          content: [
            { type: 'thinking', thinking: 'hm', signature: 's' },
            { type: 'text', text: 'Checking.' },
            { type: 'tool_use', id: 'toolu_1', name: 'get_weather', input: { city: 'Oslo' } },
          ],
        },
        {
          role: 'user',
          content: [
            { type: 'tool_result', tool_use_id: 'toolu_1', content: '-3 C' },
            { type: 'tool_result', tool_use_id: 'toolu_2', content: [{ type: 'text', text: 'down' }], is_error: true },
            { type: 'text', text: 'Thanks' },
          ],
        },
        { role: 'assistant', content: 'You are welcome.' },
        { role: 'user', content: [{ type: 'tool_result', tool_use_id: 'toolu_3' }] },
      ],
    });
    expect(chat.messages).toEqual([
      { role: 'system', content: 'Be brief.\nBe kind.' },
      { role: 'user', content: 'Weather in Oslo?' },
      {
        role: 'assistant',
        content: 'Checking.',
        toolCalls: [{ id: 'toolu_1', name: 'get_weather', arguments: '{"city":"Oslo"}' }],
      },
      { role: 'tool', content: '-3 C', toolCallId: 'toolu_1' },
      { role: 'tool', content: 'Error: down', toolCallId: 'toolu_2' },
      { role: 'user', content: 'Thanks' },
      { role: 'assistant', content: 'You are welcome.' },
      { role: 'tool', content: '', toolCallId: 'toolu_3' },
    ]);
  });

  it('maps the sampling fields, stop_sequences, tools and tool_choice', () => {
    const tool = {
      name: 'f',
      description: 'does f',
      input_schema: { type: 'object', properties: { a: { type: 'string' } } },
    };
    const { chat } = validateMessagesRequest({
      ...base,
      messages: [{ role: 'user', content: 'x' }],
      temperature: 0.5,
      top_p: 0.9,
      top_k: 40,
      stop_sequences: ['END'],
      stream: true,
      tools: [tool],
      tool_choice: { type: 'tool', name: 'f', disable_parallel_tool_use: true },
    });
    expect(chat).toMatchObject({
      model: 'local/m',
      maxTokens: 16,
      temperature: 0.5,
      topP: 0.9,
      topK: 40,
      stop: ['END'],
      stream: true,
      includeUsage: false,
      tools: [{ name: 'f', description: 'does f', parameters: tool.input_schema, strict: false }],
      toolChoice: { name: 'f' },
      parallelToolCalls: false,
      responseFormat: { type: 'text' },
    });
    const choice = (tc: unknown) =>
      validateMessagesRequest({ ...base, messages: [{ role: 'user', content: 'x' }], tools: [tool], tool_choice: tc })
        .chat.toolChoice;
    expect(choice({ type: 'any' })).toBe('required');
    expect(choice({ type: 'auto' })).toBe('auto');
    expect(choice({ type: 'none' })).toBe('none');
    expect(choice(undefined)).toBe('auto');
  });

  it('count_tokens: max_tokens not required, and generation settings refused', () => {
    expect(
      validateMessagesRequest({ model: 'local/m', messages: [{ role: 'user', content: 'x' }] }, true).chat.maxTokens,
    ).toBeUndefined();
    expect(
      validateMessagesRequest(
        { model: 'local/m', messages: [{ role: 'user', content: 'x' }], cache_control: { type: 'ephemeral' } },
        true,
      ).chat.messages,
    ).toHaveLength(1);
    expect(() =>
      validateMessagesRequest({ model: 'local/m', messages: [{ role: 'user', content: 'x' }], stream: true }, true),
    ).toThrow(expect.objectContaining({ param: 'stream' }));
  });

  it.each([
    [{ model: 'local/m', messages: [{ role: 'user', content: 'x' }] }, 'max_tokens'],
    [
      { ...base, messages: [{ role: 'user', content: [{ type: 'tool_use', id: 'a', name: 'f', input: {} }] }] },
      'messages[0].content[0]',
    ],
    [
      {
        ...base,
        messages: [
          { role: 'assistant', content: [{ type: 'tool_result', tool_use_id: 'a' }] },
          { role: 'user', content: 'x' },
        ],
      },
      'messages[0].content[0]',
    ],
    [
      {
        ...base,
        messages: [
          { role: 'assistant', content: [{ type: 'tool_use', id: 'a', name: 'f', input: [] }] },
          { role: 'user', content: 'x' },
        ],
      },
      'messages[0].content[0].input',
    ],
    [{ ...base, messages: [{ role: 'user', content: [{ type: 'document', source: {} }] }] }, 'messages[0].content[0]'],
    [
      {
        ...base,
        messages: [
          { role: 'user', content: [{ type: 'tool_result', tool_use_id: 'a', content: [{ type: 'image' }] }] },
        ],
      },
      'messages[0].content[0].content[0]',
    ],
    [
      {
        ...base,
        messages: [
          { role: 'user', content: 'x' },
          { role: 'assistant', content: 'pre' },
        ],
      },
      'messages[1]',
    ],
    [{ ...base, messages: [{ role: 'user', content: 'x' }], stop_sequences: ['a', ''] }, 'stop_sequences'],
    [{ ...base, messages: [{ role: 'user', content: 'x' }], tools: [{ name: 'f' }] }, 'tools[0].input_schema'],
    [
      {
        ...base,
        messages: [{ role: 'user', content: 'x' }],
        tools: [
          { name: 'f', input_schema: {} },
          { name: 'f', input_schema: {} },
        ],
      },
      'tools[1].name',
    ],
    [{ ...base, messages: [{ role: 'user', content: 'x' }], tool_choice: { type: 'any' } }, 'tool_choice'],
    [{ ...base, messages: [{ role: 'user', content: 'x' }], metadata: 'u' }, 'metadata'],
    [
      JSON.parse(
        '{"model":"local/m","max_tokens":16,"messages":[{"role":"user","content":"x"}],"__proto__":1}',
      ) as object,
      '__proto__',
    ],
  ])('%j -> 400 naming %s', (body, param) => {
    expect(thrownBy(() => validateMessagesRequest(body), ApiError)).toMatchObject({ status: 400, param });
  });
});

const run = (deltas: ChatDelta[]) => {
  const r = new MessageRenderer('local/m');
  const events = [...r.start(), ...deltas.flatMap((d) => r.push(d))];
  return { events, message: r.message() };
};

describe('MessageRenderer', () => {
  it('text, then a tool call: two blocks, their events in the SDK order, stop_reason tool_use', () => {
    const { events, message } = run([
      { type: 'content', text: 'Let me ' },
      { type: 'content', text: 'check.' },
      { type: 'tool_call', index: 0, id: 'call_1', name: 'f', arguments: '{"a":' },
      { type: 'tool_call', index: 0, arguments: '"x"}' },
      { type: 'finish', reason: 'tool_calls', usage: { promptTokens: 10, completionTokens: 7 } },
    ]);
    expect(events.map((e) => e.type)).toEqual([
      'message_start',
      'ping',
      'content_block_start',
      'content_block_delta',
      'content_block_delta',
      'content_block_stop',
      'content_block_start',
      'content_block_delta',
      'content_block_delta',
      'content_block_stop',
      'message_delta',
      'message_stop',
    ]);
    expect(events[0]).toMatchObject({
      message: {
        type: 'message',
        role: 'assistant',
        content: [],
        stop_reason: null,
        usage: { input_tokens: 0, output_tokens: 0 },
      },
    });
    expect(events[6]).toEqual({
      type: 'content_block_start',
      index: 1,
      content_block: { type: 'tool_use', id: 'call_1', name: 'f', input: {} },
    });
    expect(events[7]).toEqual({
      type: 'content_block_delta',
      index: 1,
      delta: { type: 'input_json_delta', partial_json: '{"a":' },
    });
    expect(events[10]).toEqual({
      type: 'message_delta',
      delta: { stop_reason: 'tool_use', stop_sequence: null },
      usage: { input_tokens: 10, output_tokens: 7 },
    });
    expect(message).toMatchObject({
      content: [
        { type: 'text', text: 'Let me check.' },
        { type: 'tool_use', id: 'call_1', name: 'f', input: { a: 'x' } },
      ],
      stop_reason: 'tool_use',
      usage: { input_tokens: 10, output_tokens: 7 },
    });
  });

  it.each([
    [{ type: 'finish', reason: 'stop' } as ChatDelta, 'end_turn', null],
    [{ type: 'finish', reason: 'length' } as ChatDelta, 'max_tokens', null],
    [{ type: 'finish', reason: 'stop', stopSequence: 'END' } as ChatDelta, 'stop_sequence', 'END'],
  ])('%j -> stop_reason %s', (finish, reason, sequence) => {
    const { message } = run([{ type: 'content', text: 'a' }, finish]);
    expect(message).toMatchObject({ stop_reason: reason, stop_sequence: sequence });
  });

  it('an empty answer has no blocks; arguments that are not a JSON object give input {}', () => {
    expect(run([{ type: 'finish', reason: 'stop' }]).message.content).toEqual([]);
    const { message } = run([
      { type: 'tool_call', index: 0, id: 'c', name: 'f', arguments: '{"a": tru' },
      { type: 'finish', reason: 'length' },
    ]);
    expect(message.content).toEqual([{ type: 'tool_use', id: 'c', name: 'f', input: {} }]);
  });
});

describe('anthropicErrorBody', () => {
  it("keeps the status's meaning in Anthropic's error types, with Hearth's code and param", () => {
    expect(
      anthropicErrorBody(invalidRequest('max_tokens: Field required', 'max_tokens', 'missing_required_parameter')),
    ).toEqual({
      type: 'error',
      error: {
        type: 'invalid_request_error',
        message: 'max_tokens: Field required',
        code: 'missing_required_parameter',
        param: 'max_tokens',
      },
    });
    expect(anthropicErrorBody(unauthorized()).error.type).toBe('authentication_error');
    expect(anthropicErrorBody(modelWarmingUp({ state: 'loading' })).error).toMatchObject({
      type: 'overloaded_error',
      state: 'loading',
    });
    expect(
      anthropicErrorBody(
        new ApiError({ status: 500, type: 'server_error', message: 'x', code: 'internal_error', param: null }),
      ).error.type,
    ).toBe('api_error');
  });
});
