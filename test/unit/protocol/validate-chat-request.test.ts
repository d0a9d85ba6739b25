import { describe, expect, it } from 'vitest';
import { validateChatRequest } from '../../../src/protocol/validate-chat-request.ts';
import { ApiError } from '../../../src/errors/index.ts';
import { expectParamRefusal, thrownBy } from '../../helpers/thrown.ts';

const base = { model: 'local/m', messages: [{ role: 'user', content: 'hi' }] };
const fail = (body: unknown) => thrownBy(() => validateChatRequest(body), ApiError);

describe('validateChatRequest', () => {
  it('accepts a minimal request with defaults', () => {
    expect(validateChatRequest(base)).toEqual({
      model: 'local/m',
      messages: [{ role: 'user', content: 'hi' }],
      stream: false,
      includeUsage: false,
      stop: [],
      temperature: undefined,
      topP: undefined,
      maxTokens: undefined,
      seed: undefined,
      presencePenalty: undefined,
      frequencyPenalty: undefined,
      user: undefined,
      tools: [],
      toolChoice: 'none',
      parallelToolCalls: true,
      responseFormat: { type: 'text' },
      topLogprobs: undefined,
      topK: undefined,
      minP: undefined,
      repetitionPenalty: undefined,
      reasoningEffort: undefined,
    });
  });

  it('maps every honoured field', () => {
    const r = validateChatRequest({
      ...base,
      stream: true,
      stream_options: { include_usage: true },
      temperature: 0.5,
      top_p: 0.9,
      max_completion_tokens: 7,
      stop: 'END',
      seed: 3,
      presence_penalty: 1,
      frequency_penalty: -1,
      user: 'u1',
    });
    expect(r).toMatchObject({
      stream: true,
      includeUsage: true,
      temperature: 0.5,
      topP: 0.9,
      maxTokens: 7,
      stop: ['END'],
      seed: 3,
      presencePenalty: 1,
      frequencyPenalty: -1,
      user: 'u1',
    });
  });

  it('reads reasoning_effort, and refuses an unknown effort naming it', () => {
    expect(validateChatRequest({ ...base, reasoning_effort: 'minimal' }).reasoningEffort).toBe('minimal');
    expect(fail({ ...base, reasoning_effort: 'max' })).toMatchObject({
      param: 'reasoning_effort',
      code: 'invalid_value',
      status: 400,
    });
  });

  it('prefers max_tokens over max_completion_tokens', () => {
    expect(validateChatRequest({ ...base, max_tokens: 5, max_completion_tokens: 9 }).maxTokens).toBe(5);
  });

  it('joins text parts and maps developer to system', () => {
    const r = validateChatRequest({
      ...base,
      messages: [
        {
          role: 'developer',
          content: [
            { type: 'text', text: 'a' },
            { type: 'text', text: 'b' },
          ],
        },
      ],
    });
    expect(r.messages).toEqual([{ role: 'system', content: 'ab' }]);
  });

  it.each([
    [{ ...base, model: 3 }, 'model', 'invalid_type'],
    [{ messages: base.messages }, 'model', 'missing_required_parameter'],
    [{ ...base, messages: 'hi' }, 'messages', 'invalid_type'],
    [{ ...base, messages: [] }, 'messages', 'empty_array'],
    [{ ...base, messages: [{ role: 'function', content: 'x' }] }, 'messages[0].role', 'invalid_value'],
    [{ ...base, messages: [{ role: 'tool', content: 'x' }] }, 'messages[0].tool_call_id', 'missing_required_parameter'],
    [
      { ...base, messages: [{ role: 'user', content: 'x', tool_calls: [] }] },
      'messages[0].tool_calls',
      'invalid_value',
    ],
    [
      {
        ...base,
        messages: [
          {
            role: 'assistant',
            content: null,
            tool_calls: [{ id: 'c', type: 'function', function: { name: 'f', arguments: {} } }],
          },
        ],
      },
      'messages[0].tool_calls[0].function.arguments',
      'invalid_type',
    ],
    [
      { ...base, messages: [{ role: 'assistant', content: null, tool_calls: [] }] },
      'messages[0].content',
      'missing_required_parameter',
    ],
    [{ ...base, messages: [{ role: 'user' }] }, 'messages[0].content', 'missing_required_parameter'],
    [
      { ...base, messages: [{ role: 'user', content: [{ type: 'image_url', image_url: {} }] }] },
      'messages[0].content[0]',
      'unsupported_content_part',
    ],
    [
      { ...base, messages: [{ role: 'user', content: [{ type: 'text' }] }] },
      'messages[0].content[0].text',
      'missing_required_parameter',
    ],
    [
      { ...base, messages: [{ role: 'user', content: [{ type: 'text', text: 5 }] }] },
      'messages[0].content[0].text',
      'invalid_type',
    ],
    [{ ...base, temperature: 2.5 }, 'temperature', 'invalid_value'],
    [{ ...base, top_p: -0.1 }, 'top_p', 'invalid_value'],
    [{ ...base, max_tokens: 0 }, 'max_tokens', 'invalid_value'],
    [{ ...base, max_tokens: 1.5 }, 'max_tokens', 'invalid_type'],
    [{ ...base, seed: 'x' }, 'seed', 'invalid_type'],
    [{ ...base, stop: ['a', 'b', 'c', 'd', 'e'] }, 'stop', 'invalid_value'],
    [{ ...base, stop: [''] }, 'stop', 'invalid_value'],
    [{ ...base, stop: 5 }, 'stop', 'invalid_type'],
    [{ ...base, stream: 'yes' }, 'stream', 'invalid_type'],
    [{ ...base, stream_options: { include_usage: true } }, 'stream_options', 'invalid_value'],
    [{ ...base, n: 2 }, 'n', 'unsupported_parameter'],
    [{ ...base, logprobs: 'yes' }, 'logprobs', 'invalid_type'],
    [{ ...base, logprobs: true, top_logprobs: 21 }, 'top_logprobs', 'invalid_value'],
    [{ ...base, top_logprobs: 2 }, 'top_logprobs', 'invalid_value'],
    [{ ...base, tools: {} }, 'tools', 'invalid_type'],
    [{ ...base, tools: [{}] }, 'tools[0].type', 'invalid_value'],
    [
      { ...base, tools: [{ type: 'function', function: { name: 'bad name' } }] },
      'tools[0].function.name',
      'invalid_value',
    ],
    [
      { ...base, tools: [{ type: 'function', function: { name: 'f', parameters: [] } }] },
      'tools[0].function.parameters',
      'invalid_type',
    ],
    [
      {
        ...base,
        tools: [
          { type: 'function', function: { name: 'f' } },
          { type: 'function', function: { name: 'f' } },
        ],
      },
      'tools[1].function.name',
      'invalid_value',
    ],
    [{ ...base, tool_choice: 'required' }, 'tool_choice', 'invalid_value'],
    [
      { ...base, tool_choice: 'sometimes', tools: [{ type: 'function', function: { name: 'f' } }] },
      'tool_choice',
      'invalid_value',
    ],
    [
      {
        ...base,
        tool_choice: { type: 'function', function: { name: 'g' } },
        tools: [{ type: 'function', function: { name: 'f' } }],
      },
      'tool_choice',
      'invalid_value',
    ],
    [{ ...base, parallel_tool_calls: 'no' }, 'parallel_tool_calls', 'invalid_type'],
    [{ ...base, response_format: { type: 'xml' } }, 'response_format.type', 'invalid_value'],
    [
      { ...base, response_format: { type: 'json_schema' } },
      'response_format.json_schema',
      'missing_required_parameter',
    ],
    [
      { ...base, response_format: { type: 'json_schema', json_schema: { schema: {} } } },
      'response_format.json_schema.name',
      'missing_required_parameter',
    ],
    [
      { ...base, response_format: { type: 'json_schema', json_schema: { name: 'x', schema: 'y' } } },
      'response_format.json_schema.schema',
      'invalid_type',
    ],
    [{ ...base, top_k: -1 }, 'top_k', 'invalid_value'],
    [{ ...base, top_k: 1.5 }, 'top_k', 'invalid_type'],
    [{ ...base, min_p: 1.5 }, 'min_p', 'invalid_value'],
    [{ ...base, repetition_penalty: 0 }, 'repetition_penalty', 'invalid_value'],
    [{ ...base, functions: [] }, 'functions', 'unsupported_parameter'],
    [{ ...base, logit_bias: { 1: 2 } }, 'logit_bias', 'unsupported_parameter'],
    [{ ...base, mystery: 1 }, 'mystery', 'unknown_parameter'],
    // max_completion_tokens is validated even next to a valid max_tokens (issue 9, defect 9)
    [{ ...base, max_tokens: 5, max_completion_tokens: 'abc' }, 'max_completion_tokens', 'invalid_type'],
    [{ ...base, max_tokens: 5, max_completion_tokens: 0 }, 'max_completion_tokens', 'invalid_value'],
    [{ ...base, max_tokens: 5, max_completion_tokens: -5 }, 'max_completion_tokens', 'invalid_value'],
    [{ ...base, max_tokens: 5, max_completion_tokens: 2.5 }, 'max_completion_tokens', 'invalid_type'],
    [{ ...base, max_completion_tokens: 'abc' }, 'max_completion_tokens', 'invalid_type'],
  ])('rejects %j naming %s', (body, param, code) => {
    expectParamRefusal(fail(body), param, code);
  });

  it('accepts harmless fields and no-op values of unsupported ones', () => {
    expect(() =>
      validateChatRequest({
        ...base,
        n: 1,
        logprobs: false,
        tools: [],
        tool_choice: 'none',
        store: false,
        metadata: {},
        response_format: { type: 'text' },
      }),
    ).not.toThrow();
  });

  it('still checks the fields without effect: store, metadata (OpenAI bounds), service_tier, messages[].name', () => {
    expect(() =>
      validateChatRequest({
        ...base,
        messages: [{ role: 'user', content: 'hi', name: 'ada' }],
        store: true,
        metadata: Object.fromEntries(Array.from({ length: 16 }, (_, i) => [`k${i}`.padEnd(64, 'x'), 'v'.repeat(512)])),
        service_tier: 'flex',
      }),
    ).not.toThrow();
    const cases: Array<[Record<string, unknown>, string, string]> = [
      [{ store: 'yes' }, 'store', 'invalid_type'],
      [{ metadata: [] }, 'metadata', 'invalid_type'],
      [{ metadata: { a: 1 } }, 'metadata.a', 'invalid_type'],
      [{ metadata: { a: 'v'.repeat(513) } }, 'metadata.a', 'invalid_value'],
      [{ metadata: { ['k'.repeat(65)]: 'v' } }, 'metadata', 'invalid_value'],
      [
        { metadata: Object.fromEntries(Array.from({ length: 17 }, (_, i) => [`k${i}`, 'v'])) },
        'metadata',
        'invalid_value',
      ],
      [{ service_tier: 'gold' }, 'service_tier', 'invalid_value'],
      [{ service_tier: 1 }, 'service_tier', 'invalid_type'],
      [{ messages: [{ role: 'user', content: 'hi', name: 7 }] }, 'messages[0].name', 'invalid_type'],
    ];
    for (const [extra, param, code] of cases) expectParamRefusal(fail({ ...base, ...extra }), param, code);
    // '__proto__' is refused: stored (Responses, batches), LMDB's msgpack would read it back as '__proto_'.
    expectParamRefusal(
      fail({ ...base, metadata: JSON.parse('{"__proto__": "x"}') as unknown }),
      'metadata',
      'invalid_value',
    );
  });

  it('parses tools, tool_choice, response_format, logprobs and the sampler extensions', () => {
    const weather = {
      type: 'function',
      function: {
        name: 'get_weather',
        description: 'Weather',
        parameters: { type: 'object', properties: { city: { type: 'string' } } },
        strict: true,
      },
    };
    const r = validateChatRequest({
      ...base,
      tools: [weather, { type: 'function', function: { name: 'noop' } }],
      tool_choice: { type: 'function', function: { name: 'noop' } },
      parallel_tool_calls: false,
      response_format: { type: 'json_schema', json_schema: { name: 'out', schema: { type: 'object' }, strict: true } },
      logprobs: true,
      top_logprobs: 3,
      top_k: 40,
      min_p: 0.05,
      repetition_penalty: 1.1,
    });
    expect(r.tools).toEqual([
      {
        name: 'get_weather',
        description: 'Weather',
        parameters: { type: 'object', properties: { city: { type: 'string' } } },
        strict: true,
      },
      { name: 'noop', description: undefined, parameters: { type: 'object', properties: {} }, strict: false },
    ]);
    expect(r).toMatchObject({
      toolChoice: { name: 'noop' },
      parallelToolCalls: false,
      topLogprobs: 3,
      topK: 40,
      minP: 0.05,
      repetitionPenalty: 1.1,
    });
    expect(r.responseFormat).toEqual({
      type: 'json_schema',
      name: 'out',
      schema: { type: 'object' },
      strict: true,
      schemaParam: 'response_format.json_schema.schema',
    });
    expect(validateChatRequest({ ...base, tools: [weather] }).toolChoice).toBe('auto');
    expect(validateChatRequest({ ...base, logprobs: true }).topLogprobs).toBe(0);
    expect(validateChatRequest({ ...base, response_format: { type: 'json_object' } }).responseFormat).toEqual({
      type: 'json_object',
    });
  });

  it('parses an assistant tool call and the tool answer in the history', () => {
    const r = validateChatRequest({
      ...base,
      messages: [
        { role: 'user', content: 'Weather in Paris?' },
        {
          role: 'assistant',
          content: null,
          tool_calls: [
            { id: 'call_1', type: 'function', function: { name: 'get_weather', arguments: '{"city":"Paris"}' } },
          ],
        },
        { role: 'tool', tool_call_id: 'call_1', content: [{ type: 'text', text: '21C' }] },
      ],
    });
    expect(r.messages).toEqual([
      { role: 'user', content: 'Weather in Paris?' },
      {
        role: 'assistant',
        content: '',
        toolCalls: [{ id: 'call_1', name: 'get_weather', arguments: '{"city":"Paris"}' }],
      },
      { role: 'tool', content: '21C', toolCallId: 'call_1' },
    ]);
  });

  it('rejects a non-object body', () => {
    expect(fail([1]).code).toBe('invalid_type');
    expect(fail(null).code).toBe('invalid_type');
  });

  it('describes a hostile role without walking into it (100,000 nested arrays: a 400, no stack overflow)', () => {
    let role: unknown = 'user';
    for (let i = 0; i < 100_000; i++) role = [role];
    const e = fail({ ...base, messages: [{ role, content: 'x' }] });
    expect(e.status).toBe(400);
    expect(e.param).toBe('messages[0].role');
    expect(e.message).toContain('got an array');
    const long = fail({ ...base, messages: [{ role: 'r'.repeat(100_000), content: 'x' }] });
    expect(long.message.length).toBeLessThan(200);
  });
});
