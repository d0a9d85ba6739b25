import { describe, expect, it } from 'vitest';
import { ApiError } from '../../../src/errors/api-error.ts';
import { anthropicAdapter, toAnthropicMessages } from '../../../src/providers/anthropic.ts';
import { bodyOf, ev, KEY, makeCall, optionsFor } from './helpers.ts';

describe('Anthropic translation', () => {
  it('lifts system messages into `system` and merges consecutive same-role turns', () => {
    expect(
      toAnthropicMessages([
        { role: 'system', content: 'A' },
        { role: 'user', content: 'u1' },
        { role: 'user', content: 'u2' },
        { role: 'system', content: 'B' },
        { role: 'assistant', content: 'a1' },
      ]),
    ).toEqual({
      system: 'A\n\nB',
      messages: [
        { role: 'user', content: 'u1\n\nu2' },
        { role: 'assistant', content: 'a1' },
      ],
    });
    expect(() => toAnthropicMessages([{ role: 'system', content: 'only' }])).toThrow(ApiError);
  });

  it('builds POST {base}/v1/messages with x-api-key, anthropic-version, a default max_tokens, clamped temperature', () => {
    const req = anthropicAdapter.buildRequest(
      makeCall({ temperature: 1.7, stop: ['Z'], user: 'u-9', topP: 0.8 }),
      true,
      optionsFor('anthropic'),
    );
    expect(req.url).toBe('http://upstream.test/base/v1/messages');
    expect(req.headers['x-api-key']).toBe(KEY);
    expect(req.headers['anthropic-version']).toBe('2023-06-01');
    expect(req.headers).not.toHaveProperty('authorization');
    expect(bodyOf(req)).toEqual({
      model: 'the-model',
      max_tokens: 4096,
      messages: [{ role: 'user', content: 'Hi' }],
      temperature: 1,
      top_p: 0.8,
      stop_sequences: ['Z'],
      metadata: { user_id: 'u-9' },
      stream: true,
    });
    expect(
      bodyOf(anthropicAdapter.buildRequest(makeCall({ maxTokens: 12 }), false, optionsFor('anthropic'))).max_tokens,
    ).toBe(12);
  });

  it('rejects seed and non-zero penalties with a 400 naming the field; zero penalties are fine', () => {
    for (const [field, request] of [
      ['seed', { seed: 1 }],
      ['presence_penalty', { presencePenalty: 0.5 }],
      ['frequency_penalty', { frequencyPenalty: -1 }],
    ] as const) {
      try {
        anthropicAdapter.buildRequest(makeCall(request), false, optionsFor('anthropic'));
        expect.unreachable();
      } catch (err) {
        expect(err).toMatchObject({ status: 400, param: field });
      }
    }
    expect(() =>
      anthropicAdapter.buildRequest(
        makeCall({ presencePenalty: 0, frequencyPenalty: 0 }),
        false,
        optionsFor('anthropic'),
      ),
    ).not.toThrow();
  });

  it('parses replies: text blocks joined, stop reasons mapped, cache tokens counted in the prompt', () => {
    const reply = anthropicAdapter.parseReply({
      content: [
        { type: 'text', text: 'a' },
        { type: 'tool_use', id: 'x' },
        { type: 'text', text: 'b' },
      ],
      stop_reason: 'max_tokens',
      usage: { input_tokens: 10, cache_creation_input_tokens: 2, cache_read_input_tokens: 3, output_tokens: 4 },
    });
    expect(reply).toEqual([
      { type: 'text', text: 'a' },
      { type: 'tool_call', key: 1, id: 'x', name: undefined, arguments: '{}' },
      { type: 'text', text: 'b' },
      { type: 'finish', reason: 'length' },
      { type: 'usage', usage: { promptTokens: 15, completionTokens: 4, cachedTokens: 3 } },
    ]);
    expect(anthropicAdapter.parseReply({ content: [], stop_reason: 'stop_sequence' })).toEqual([
      { type: 'finish', reason: 'stop' },
    ]);
    expect(anthropicAdapter.parseReply({ content: [], stop_reason: 'tool_use' })).toEqual([
      { type: 'finish', reason: 'tool_calls' },
    ]);
  });

  it('translates the stream events', () => {
    expect(
      anthropicAdapter.parseStreamEvent(
        ev({ type: 'message_start', message: { usage: { input_tokens: 5, output_tokens: 1 } } }, 'message_start'),
      ),
    ).toEqual([{ type: 'usage', usage: { promptTokens: 5, completionTokens: 1, cachedTokens: undefined } }]);
    expect(
      anthropicAdapter.parseStreamEvent(
        ev({ type: 'content_block_delta', index: 0, delta: { type: 'text_delta', text: 'Hi' } }),
      ),
    ).toEqual([{ type: 'text', text: 'Hi' }]);
    expect(
      anthropicAdapter.parseStreamEvent(
        ev({
          type: 'content_block_start',
          index: 1,
          content_block: { type: 'tool_use', id: 'toolu_1', name: 'f', input: {} },
        }),
      ),
    ).toEqual([{ type: 'tool_call', key: 1, id: 'toolu_1', name: 'f', arguments: '' }]);
    expect(
      anthropicAdapter.parseStreamEvent(
        ev({ type: 'content_block_delta', index: 1, delta: { type: 'input_json_delta', partial_json: '{' } }),
      ),
    ).toEqual([{ type: 'tool_call', key: 1, arguments: '{' }]);
    expect(
      anthropicAdapter.parseStreamEvent(
        ev({ type: 'content_block_start', index: 0, content_block: { type: 'text', text: '' } }),
      ),
    ).toEqual([]);
    expect(
      anthropicAdapter.parseStreamEvent(
        ev({ type: 'message_delta', delta: { stop_reason: 'end_turn' }, usage: { output_tokens: 9 } }),
      ),
    ).toEqual([
      { type: 'finish', reason: 'stop' },
      { type: 'usage', usage: { promptTokens: undefined, completionTokens: 9, cachedTokens: undefined } },
    ]);
    expect(anthropicAdapter.parseStreamEvent(ev({ type: 'message_stop' }))).toEqual([{ type: 'end' }]);
    expect(anthropicAdapter.parseStreamEvent(ev({ type: 'ping' }))).toEqual([]);
    expect(anthropicAdapter.parseStreamEvent(ev({ type: 'some_future_event' }))).toEqual([]);
    expect(
      anthropicAdapter.parseStreamEvent(
        ev({ type: 'error', error: { type: 'overloaded_error', message: 'Overloaded' } }, 'error'),
      ),
    ).toEqual([{ type: 'error', status: 529, message: 'overloaded_error: Overloaded' }]);
  });
});
