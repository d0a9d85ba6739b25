import { describe, expect, it } from 'vitest';
import { ApiError } from '../../../src/errors/api-error.ts';
import { geminiAdapter, geminiFinishReason, toGeminiContents } from '../../../src/providers/gemini.ts';
import { bodyOf, ev, KEY, makeCall, optionsFor } from './helpers.ts';

describe('Gemini translation', () => {
  it('maps roles to user/model, system to systemInstruction, and merges same-role turns', () => {
    expect(
      toGeminiContents([
        { role: 'system', content: 'S' },
        { role: 'user', content: 'u1' },
        { role: 'assistant', content: 'a1' },
        { role: 'assistant', content: 'a2' },
      ]),
    ).toEqual({
      systemInstruction: { parts: [{ text: 'S' }] },
      contents: [
        { role: 'user', parts: [{ text: 'u1' }] },
        { role: 'model', parts: [{ text: 'a1\n\na2' }] },
      ],
    });
    expect(() => toGeminiContents([{ role: 'system', content: 'S' }])).toThrow(ApiError);
  });

  it('builds generateContent / streamGenerateContent?alt=sse URLs with x-goog-api-key and a generationConfig', () => {
    const options = optionsFor('gemini');
    const call = makeCall(
      {
        temperature: 0.4,
        topP: 0.9,
        maxTokens: 20,
        stop: ['END'],
        seed: 3,
        presencePenalty: 0.1,
        frequencyPenalty: 0.2,
      },
      { model: 'models/gemini-2.0-flash' },
    );
    const json = geminiAdapter.buildRequest(call, false, options);
    expect(json.url).toBe('http://upstream.test/base/v1beta/models/gemini-2.0-flash:generateContent');
    expect(json.headers['x-goog-api-key']).toBe(KEY);
    expect(json.url).not.toContain(KEY);
    expect(bodyOf(json).generationConfig).toEqual({
      temperature: 0.4,
      topP: 0.9,
      maxOutputTokens: 20,
      stopSequences: ['END'],
      seed: 3,
      presencePenalty: 0.1,
      frequencyPenalty: 0.2,
    });
    expect(geminiAdapter.buildRequest(call, true, options).url).toBe(
      'http://upstream.test/base/v1beta/models/gemini-2.0-flash:streamGenerateContent?alt=sse',
    );
    expect(bodyOf(geminiAdapter.buildRequest(makeCall(), false, options))).not.toHaveProperty('generationConfig');
  });

  it('a json_schema Gemini cannot take is a 400 naming the field the caller sent it in', () => {
    const recursive = {
      type: 'object',
      properties: { next: { $ref: '#/$defs/Node' } },
      $defs: { Node: { type: 'object', properties: { next: { $ref: '#/$defs/Node' } } } },
    };
    const call = makeCall({
      responseFormat: {
        type: 'json_schema',
        name: 'o',
        schema: recursive,
        strict: false,
        schemaParam: 'response_format.json_schema.schema',
      },
    });
    expect(() => geminiAdapter.buildRequest(call, false, optionsFor('gemini'))).toThrow(
      expect.objectContaining({ status: 400, param: 'response_format.json_schema.schema' }),
    );
  });

  it('maps finish reasons: MAX_TOKENS -> length, everything else (SAFETY, RECITATION, ...) -> stop', () => {
    expect(geminiFinishReason('MAX_TOKENS')).toBe('length');
    for (const r of ['STOP', 'SAFETY', 'RECITATION', 'BLOCKLIST', 'OTHER']) expect(geminiFinishReason(r)).toBe('stop');
  });

  it('parses replies: thought parts skipped, thoughts counted as completion, blocked prompts are empty answers', () => {
    const reply = geminiAdapter.parseReply({
      candidates: [
        {
          content: { role: 'model', parts: [{ text: 'thinking', thought: true }, { text: 'answer' }] },
          finishReason: 'STOP',
        },
      ],
      usageMetadata: {
        promptTokenCount: 4,
        candidatesTokenCount: 2,
        thoughtsTokenCount: 5,
        cachedContentTokenCount: 1,
      },
    });
    expect(reply).toEqual([
      { type: 'text', text: 'answer' },
      { type: 'finish', reason: 'stop' },
      { type: 'usage', usage: { promptTokens: 4, completionTokens: 7, cachedTokens: 1 } },
    ]);
    expect(
      geminiAdapter.parseReply({ promptFeedback: { blockReason: 'SAFETY' }, usageMetadata: { promptTokenCount: 3 } }),
    ).toEqual([
      { type: 'finish', reason: 'stop' },
      { type: 'usage', usage: { promptTokens: 3, completionTokens: undefined, cachedTokens: undefined } },
    ]);
    // Neither a candidate nor a reason for none: a 502 bad_response, not an empty 200.
    expect(() => geminiAdapter.parseReply({ usageMetadata: { promptTokenCount: 3 } })).toThrow(/no candidates/);
  });

  it('parses stream chunks and error chunks', () => {
    expect(
      geminiAdapter.parseStreamEvent(
        ev({
          candidates: [{ content: { parts: [{ text: 'Hel' }] } }],
          usageMetadata: { promptTokenCount: 2, totalTokenCount: 2 },
        }),
      ),
    ).toEqual([
      { type: 'text', text: 'Hel' },
      { type: 'usage', usage: { promptTokens: 2, completionTokens: undefined, cachedTokens: undefined } },
    ]);
    expect(
      geminiAdapter.parseStreamEvent(
        ev({ candidates: [{ content: { parts: [{ text: 'lo' }] }, finishReason: 'MAX_TOKENS' }] }),
      ),
    ).toEqual([
      { type: 'text', text: 'lo' },
      { type: 'finish', reason: 'length' },
    ]);
    expect(
      geminiAdapter.parseStreamEvent(
        ev({ error: { code: 503, message: 'The model is overloaded.', status: 'UNAVAILABLE' } }),
      ),
    ).toEqual([{ type: 'error', status: 503, message: 'The model is overloaded.' }]);
  });
});
