import { describe, expect, it } from 'vitest';
import { ApiError } from '../../../src/errors/api-error.ts';
import { mistralAdapter, mistralFinishReason } from '../../../src/providers/mistral.ts';
import { openAiAdapter, openAiFinishReason } from '../../../src/providers/openai.ts';
import { bodyOf, ev, KEY, makeCall, optionsFor } from './helpers.ts';

const full = {
  messages: [
    { role: 'system' as const, content: 'sys' },
    { role: 'user' as const, content: 'u1' },
  ],
  temperature: 0.7,
  topP: 0.9,
  maxTokens: 50,
  stop: ['x', 'y'],
  seed: 7,
  presencePenalty: 0.5,
  frequencyPenalty: -0.5,
  user: 'u-1',
};

describe('OpenAI translation', () => {
  it('builds POST {base}/chat/completions with Bearer auth and every honoured field', () => {
    const req = openAiAdapter.buildRequest(makeCall(full), false, optionsFor('openai'));
    expect(req.url).toBe('http://upstream.test/base/chat/completions');
    expect(req.headers.authorization).toBe(`Bearer ${KEY}`);
    expect(bodyOf(req)).toEqual({
      model: 'the-model',
      messages: [
        { role: 'system', content: 'sys' },
        { role: 'user', content: 'u1' },
      ],
      temperature: 0.7,
      top_p: 0.9,
      max_completion_tokens: 50,
      stop: ['x', 'y'],
      seed: 7,
      presence_penalty: 0.5,
      frequency_penalty: -0.5,
      user: 'u-1',
    });
  });

  it('asks for usage on streams only, and uses the project temperature when the request has none', () => {
    const req = bodyOf(
      openAiAdapter.buildRequest(makeCall({}, { defaultTemperature: 0.2 }), true, optionsFor('openai')),
    );
    expect(req).toMatchObject({ stream: true, stream_options: { include_usage: true }, temperature: 0.2 });
    expect(bodyOf(openAiAdapter.buildRequest(makeCall(), false, optionsFor('openai')))).not.toHaveProperty(
      'stream_options',
    );
  });

  it('parses replies and stream events', () => {
    const reply = openAiAdapter.parseReply({
      choices: [{ message: { content: 'hey' }, finish_reason: 'length' }],
      usage: { prompt_tokens: 3, completion_tokens: 2, prompt_tokens_details: { cached_tokens: 1 } },
    });
    expect(reply).toEqual([
      { type: 'text', text: 'hey' },
      { type: 'finish', reason: 'length' },
      { type: 'usage', usage: { promptTokens: 3, completionTokens: 2, cachedTokens: 1 } },
    ]);
    expect(openAiAdapter.parseStreamEvent(ev({ choices: [{ delta: { content: 'a' }, finish_reason: null }] }))).toEqual(
      [{ type: 'text', text: 'a' }],
    );
    expect(openAiAdapter.parseStreamEvent(ev({ choices: [{ delta: {}, finish_reason: 'content_filter' }] }))).toEqual([
      { type: 'finish', reason: 'stop' },
    ]);
    expect(openAiAdapter.parseStreamEvent(ev('[DONE]'))).toEqual([{ type: 'end' }]);
    expect(openAiAdapter.parseStreamEvent(ev({ error: { message: 'boom' } }))).toEqual([
      { type: 'error', message: 'boom' },
    ]);
    expect(() => openAiAdapter.parseStreamEvent(ev('{not json'))).toThrow(/not valid JSON/);
    expect(() => openAiAdapter.parseReply({ nothing: true })).toThrow(ApiError);
    // Shapes no compatible server sends are a 502 bad_response naming them, not an empty 200.
    for (const choice of [
      { message: { content: { text: 'x' } }, finish_reason: 'stop' },
      { message: { content: 'x' }, finish_reason: 42 },
    ])
      expect(() => openAiAdapter.parseReply({ choices: [choice] })).toThrow(/content|finish_reason/);
    expect(openAiAdapter.parseReply({ choices: [{ message: { content: null }, finish_reason: null }] })).toEqual([
      { type: 'text', text: '' },
    ]);
    expect(openAiFinishReason('tool_calls')).toBe('tool_calls');
    expect(openAiFinishReason('content_filter')).toBe('stop');
  });
});

describe('Mistral translation', () => {
  it('uses max_tokens and random_seed, and sends no user / stream_options (Mistral rejects unknown fields)', () => {
    const req = mistralAdapter.buildRequest(makeCall(full), true, optionsFor('mistral'));
    expect(req.url).toBe('http://upstream.test/base/chat/completions');
    expect(req.headers.authorization).toBe(`Bearer ${KEY}`);
    const body = bodyOf(req);
    expect(body).toMatchObject({ max_tokens: 50, random_seed: 7, stream: true, stop: ['x', 'y'] });
    for (const field of ['seed', 'user', 'stream_options', 'max_completion_tokens'])
      expect(body).not.toHaveProperty(field);
  });

  it('maps model_length to length and treats finish_reason error as an upstream failure', () => {
    expect(mistralFinishReason('model_length')).toBe('length');
    expect(mistralFinishReason('stop')).toBe('stop');
    expect(() => mistralFinishReason('error')).toThrow(ApiError);
    expect(
      mistralAdapter.parseStreamEvent(
        ev({
          choices: [{ delta: { content: [{ type: 'text', text: 'chunked' }] }, finish_reason: 'model_length' }],
          usage: { prompt_tokens: 1, completion_tokens: 2 },
        }),
      ),
    ).toEqual([
      { type: 'text', text: 'chunked' },
      { type: 'finish', reason: 'length' },
      { type: 'usage', usage: { promptTokens: 1, completionTokens: 2, cachedTokens: undefined } },
    ]);
    expect(mistralAdapter.parseStreamEvent(ev({ object: 'error', message: 'bad' }))).toEqual([
      { type: 'error', message: 'bad' },
    ]);
  });
});
