import { describe, expect, it } from 'vitest';
import { validateCompletionsRequest } from '../../../src/protocol/completions-request.ts';
import { type ChoiceDelta, TextCompletionRenderer } from '../../../src/protocol/text-completion.ts';
import { tokenLogprob } from '../../helpers/token-logprobs.ts';

/** Legacy completions' pure parts: the request validator and the text_completion renderer (JSON and SSE). */

const chunks = (sse: string) =>
  sse
    .split('\n\n')
    .filter((e) => e.startsWith('data: {'))
    .map(
      (e) =>
        JSON.parse(e.slice(6)) as {
          choices: Array<{ index: number; text: string; finish_reason: string | null; logprobs: unknown }>;
          usage?: unknown;
        },
    );

describe('validateCompletionsRequest', () => {
  it('takes every prompt form and defaults max_tokens to 16', () => {
    expect(validateCompletionsRequest({ model: 'm', prompt: 'a' })).toMatchObject({
      prompts: ['a'],
      maxTokens: 16,
      echo: false,
      stream: false,
    });
    expect(validateCompletionsRequest({ model: 'm', prompt: ['a', 'b'] }).prompts).toEqual(['a', 'b']);
    expect(validateCompletionsRequest({ model: 'm', prompt: [1, 2, 3] }).prompts).toEqual([[1, 2, 3]]);
    expect(validateCompletionsRequest({ model: 'm', prompt: [[1], 'x'] }).prompts).toEqual([[1], 'x']);
    expect(
      validateCompletionsRequest({
        model: 'm',
        prompt: 'a',
        logprobs: 0,
        stream: true,
        stream_options: { include_usage: true },
      }),
    ).toMatchObject({ logprobs: 0, includeUsage: true });
  });

  it('refuses more than 64 prompts, a mixed token array, and __proto__ as a field', () => {
    expect(() => validateCompletionsRequest({ model: 'm', prompt: Array.from({ length: 65 }, () => 'x') })).toThrow(
      expect.objectContaining({ param: 'prompt' }),
    );
    expect(() => validateCompletionsRequest({ model: 'm', prompt: [1, 'x'] })).toThrow(
      expect.objectContaining({ param: 'prompt[1]' }),
    );
    expect(() => validateCompletionsRequest(JSON.parse('{"model":"m","prompt":"a","__proto__":{"n":2}}'))).toThrow(
      expect.objectContaining({ param: '__proto__', code: 'unknown_parameter' }),
    );
  });
});

describe('TextCompletionRenderer', () => {
  it('JSON: interleaved choices, each with its own text, finish and logprobs; usage from the finish', () => {
    const r = new TextCompletionRenderer('m', ['', ''], true, false);
    const deltas: ChoiceDelta[] = [
      {
        type: 'content',
        text: 'He',
        logprobs: [
          tokenLogprob('He', -0.1, [
            ['He', -0.1],
            ['__proto__', -2],
          ]),
        ],
        choice: 0,
      },
      { type: 'content', text: 'Yo', logprobs: [tokenLogprob('Yo', -0.5)], choice: 1 },
      { type: 'content', text: 'llo', logprobs: [tokenLogprob('llo', -0.2)], choice: 0 },
      { type: 'content', text: '', choice: 1, end: 'length' },
      { type: 'content', text: '', choice: 0, end: 'stop' },
      { type: 'finish', reason: 'stop', usage: { promptTokens: 4, completionTokens: 3 } },
    ];
    for (const d of deltas) r.push(d);
    const c = r.completion();
    expect(c).toMatchObject({
      object: 'text_completion',
      model: 'm',
      usage: { prompt_tokens: 4, completion_tokens: 3, total_tokens: 7 },
    });
    expect(c.id).toMatch(/^cmpl-/);
    expect(c.choices.map((x) => [x.index, x.text, x.finish_reason])).toEqual([
      [0, 'Hello', 'stop'],
      [1, 'Yo', 'length'],
    ]);
    // A token named '__proto__' is an own key (a plain object literal could not hold it).
    expect(JSON.stringify(c.choices[0]!.logprobs)).toBe(
      '{"tokens":["He","llo"],"token_logprobs":[-0.1,-0.2],"top_logprobs":[{"He":-0.1,"__proto__":-2},{}],"text_offset":[0,2]}',
    );
  });

  it('JSON: echo starts the text with the prompt; a single generation ended by the finish alone', () => {
    const r = new TextCompletionRenderer('m', ['Once'], false, false);
    r.push({ type: 'content', text: ' upon' });
    r.push({ type: 'finish', reason: 'length' });
    expect(r.completion().choices).toEqual([{ text: 'Once upon', index: 0, logprobs: null, finish_reason: 'length' }]);
  });

  it('SSE: echo chunks first, text chunks, a finish chunk per choice, the usage chunk, [DONE]', () => {
    const r = new TextCompletionRenderer('m', ['A', 'B'], false, true);
    let sse = r.streamHead();
    const deltas: ChoiceDelta[] = [
      { type: 'content', text: 'x', choice: 1 },
      { type: 'content', text: '', choice: 1, end: 'stop' },
      { type: 'content', text: 'y', choice: 0 },
      { type: 'content', text: 'z', choice: 0, end: 'length' },
      { type: 'finish', reason: 'length', usage: { promptTokens: 2, completionTokens: 3 } },
    ];
    for (const d of deltas) sse += r.streamEvent(d);
    expect(sse.endsWith('data: [DONE]\n\n')).toBe(true);
    const all = chunks(sse);
    expect(all.slice(0, 2).map((c) => c.choices[0])).toEqual([
      { text: 'A', index: 0, logprobs: null, finish_reason: null },
      { text: 'B', index: 1, logprobs: null, finish_reason: null },
    ]);
    const byChoice = (i: number) => all.flatMap((c) => c.choices).filter((x) => x.index === i);
    expect(
      byChoice(0)
        .map((x) => x.text)
        .join(''),
    ).toBe('Ayz');
    expect(
      byChoice(1)
        .map((x) => x.text)
        .join(''),
    ).toBe('Bx');
    expect(
      byChoice(0)
        .map((x) => x.finish_reason)
        .filter((f) => f !== null),
    ).toEqual(['length']);
    expect(
      byChoice(1)
        .map((x) => x.finish_reason)
        .filter((f) => f !== null),
    ).toEqual(['stop']);
    expect(all.at(-1)).toMatchObject({
      choices: [],
      usage: { prompt_tokens: 2, completion_tokens: 3, total_tokens: 5 },
    });
  });

  it('SSE: logprobs ride on their text chunk with text_offset continuing across chunks', () => {
    const r = new TextCompletionRenderer('m', [''], true, false);
    const sse =
      r.streamEvent({ type: 'content', text: 'ab', logprobs: [tokenLogprob('a', -1), tokenLogprob('b', -2)] }) +
      r.streamEvent({ type: 'content', text: 'c', logprobs: [tokenLogprob('c', -3)] }) +
      r.streamEvent({ type: 'finish', reason: 'stop' });
    const offsets = chunks(sse).flatMap(
      (c) => (c.choices[0]?.logprobs as { text_offset: number[] } | null)?.text_offset ?? [],
    );
    expect(offsets).toEqual([0, 1, 2]);
    expect(sse).not.toContain('"usage"');
  });
});
