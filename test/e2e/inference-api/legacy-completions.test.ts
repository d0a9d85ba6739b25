import OpenAI from 'openai';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { DEFAULT_TINY_REPLY } from '../../../models/tiny-llama.ts';
import type { HearthProcess } from '../../helpers/hearth-process.ts';
import { serveModel } from '../../helpers/served-model.ts';

/**
 * POST /api/inference/v1/completions (legacy completions) end to end with the official SDK over a real
 * `hearth serve` on the tiny chat model. The model replies DEFAULT_TINY_REPLY (3 tokens, then EOS) after a
 * prompt ending in "\n" and runs to max_tokens after any other: so 'Hi' (no newline) running to the cap shows
 * that the prompt reached the model raw (a chat template ends its prompt with "\n"). 2 slots and 8 queue places.
 */
let hearth: HearthProcess;
let client: OpenAI;
const MODEL_ID = 'local/tiny-chat';
/** 'Hi\n' greedily: the tiny model answers it with its script, DEFAULT_TINY_REPLY (3 tokens, then EOS). */
const SCRIPTED = { model: MODEL_ID, prompt: 'Hi\n', temperature: 0 };

beforeAll(async () => {
  ({ hearth, client } = await serveModel(MODEL_ID, ['--slots', '2', '--queue-limit', '8']));
});
afterAll(() => hearth?.stop());

const post = (body: unknown, headers: Record<string, string> = {}) =>
  fetch(`${hearth.baseUrl}/api/inference/v1/completions`, {
    method: 'POST',
    headers: { authorization: `Bearer ${hearth.key}`, 'content-type': 'application/json', ...headers },
    body: typeof body === 'string' ? body : JSON.stringify(body),
  });

describe('completions.create (JSON)', () => {
  it('answers a raw prompt in the text_completion shape', async () => {
    const r = await client.completions.create({ ...SCRIPTED, max_tokens: 20, seed: 7, top_p: 0.9 });
    expect(r.object).toBe('text_completion');
    expect(r.id).toMatch(/^cmpl-/);
    expect(r.model).toBe(MODEL_ID);
    expect(r.choices).toEqual([{ text: DEFAULT_TINY_REPLY, index: 0, logprobs: null, finish_reason: 'stop' }]);
    expect(r.usage!.completion_tokens).toBe(3);
    expect(r.usage!.total_tokens).toBe(r.usage!.prompt_tokens + 3);
  });

  it('sends the prompt without a chat template, and caps at max_tokens (default 16)', async () => {
    const capped = await client.completions.create({ model: MODEL_ID, prompt: 'Hi', max_tokens: 5, temperature: 0 });
    expect(capped.choices[0]!.finish_reason).toBe('length');
    expect(capped.usage!.completion_tokens).toBe(5);
    expect(capped.choices[0]!.text).not.toBe('');
    const byDefault = await client.completions.create({ model: MODEL_ID, prompt: 'Hi', temperature: 0 });
    expect(byDefault.usage!.completion_tokens).toBe(16);
    expect(byDefault.choices[0]!.finish_reason).toBe('length');
  });

  it("an empty prompt is the BOS token alone (the model's vocabulary asks for one)", async () => {
    const r = await client.completions.create({ model: MODEL_ID, prompt: '', max_tokens: 2, temperature: 0 });
    expect(r.usage).toMatchObject({ prompt_tokens: 1, completion_tokens: 2 });
  });

  it('echo puts the prompt before the completion', async () => {
    const r = await client.completions.create({ ...SCRIPTED, echo: true });
    expect(r.choices[0]!.text).toBe(`Hi\n${DEFAULT_TINY_REPLY}`);
  });

  it('stop ends the text before the stop string', async () => {
    const r = await client.completions.create({ ...SCRIPTED, stop: [' am'] });
    expect(r.choices[0]).toMatchObject({ text: 'Hello! I', finish_reason: 'stop' });
  });

  it('an array of prompts gives one choice per prompt, in order, with usage summed', async () => {
    const one = await client.completions.create(SCRIPTED);
    const r = await client.completions.create({
      model: MODEL_ID,
      prompt: ['Hi\n', 'Hey', 'Hello\n'],
      max_tokens: 2,
      temperature: 0,
    });
    expect(r.choices.map((c) => c.index)).toEqual([0, 1, 2]);
    expect(r.choices[0]).toMatchObject({ text: 'Hello! I am a tiny', finish_reason: 'length' });
    expect(r.choices[1]!.finish_reason).toBe('length');
    expect(r.choices[2]).toMatchObject({ text: 'Hello! I am a tiny', finish_reason: 'length' });
    expect(r.usage!.completion_tokens).toBe(6);
    expect(r.usage!.prompt_tokens).toBeGreaterThan(one.usage!.prompt_tokens);
  });

  it('prompts past the slots and queue places: 503 queue_full, and the ones already started are cancelled', async () => {
    const full = await client.completions.create({
      model: MODEL_ID,
      prompt: Array.from({ length: 10 }, () => 'Hey'),
      max_tokens: 3,
      temperature: 0,
    });
    expect(full.choices).toHaveLength(10); // 2 slots + 8 queue places
    await expect(
      client.completions.create({ model: MODEL_ID, prompt: Array.from({ length: 11 }, () => 'Hey'), max_tokens: 200 }),
    ).rejects.toMatchObject({ status: 503, code: 'queue_full' });
    await expect
      .poll(async () => ((await (await fetch(`${hearth.baseUrl}/health`)).json()) as { requests: unknown }).requests)
      .toEqual({ running: 0, waiting: 0 });
    expect((await client.completions.create(SCRIPTED)).choices[0]!.text).toBe(DEFAULT_TINY_REPLY);
  });

  it('logprobs (legacy shape): tokens, token_logprobs, top_logprobs, text_offset', async () => {
    const r = await client.completions.create({ ...SCRIPTED, logprobs: 2 });
    const c = r.choices[0]!;
    expect(c.text).toBe(DEFAULT_TINY_REPLY);
    const lp = c.logprobs!;
    expect(lp.tokens!.join('')).toBe(c.text);
    expect(lp.tokens).toHaveLength(3);
    expect(lp.token_logprobs).toHaveLength(3);
    for (const v of lp.token_logprobs!) expect(v).toBeLessThanOrEqual(0);
    expect(lp.top_logprobs).toHaveLength(3);
    lp.top_logprobs!.forEach((top, i) => {
      expect(Object.keys(top).length).toBeGreaterThanOrEqual(1);
      expect(Object.keys(top).length).toBeLessThanOrEqual(2);
      expect(top[lp.tokens![i]!]).toBeCloseTo(lp.token_logprobs![i]!, 4); // the chosen token is the likeliest (temperature 0)
    });
    expect(lp.text_offset).toEqual([0, lp.tokens![0]!.length, lp.tokens![0]!.length + lp.tokens![1]!.length]);
  });

  it('takes token-id prompts, and refuses an id outside the vocabulary', async () => {
    const r = await client.completions.create({ model: MODEL_ID, prompt: [5, 6, 7], max_tokens: 2, temperature: 0 });
    expect(r.choices[0]!.finish_reason).toBe('length');
    expect(r.usage).toMatchObject({ prompt_tokens: 3, completion_tokens: 2 });
    const two = await client.completions.create({
      model: MODEL_ID,
      prompt: [[5, 6], [7]],
      max_tokens: 1,
      temperature: 0,
    });
    expect(two.choices).toHaveLength(2);
    expect(two.usage!.prompt_tokens).toBe(3);
    await expect(
      client.completions.create({ model: MODEL_ID, prompt: [5, 99999999], max_tokens: 1 }),
    ).rejects.toMatchObject({ status: 400, param: 'prompt', code: 'invalid_value' });
  });
});

describe('completions.create (stream)', () => {
  it('streams text_completion chunks, a finish chunk, the usage chunk, then [DONE]', async () => {
    const stream = await client.completions.create({
      ...SCRIPTED,
      stream: true,
      stream_options: { include_usage: true },
    });
    let text = '';
    const finishes: Array<string | null> = [];
    let usage: OpenAI.CompletionUsage | undefined;
    for await (const chunk of stream) {
      expect(chunk.object).toBe('text_completion');
      for (const c of chunk.choices) {
        text += c.text;
        if (c.finish_reason !== null) finishes.push(c.finish_reason);
      }
      if (chunk.usage) usage = chunk.usage;
    }
    expect(text).toBe(DEFAULT_TINY_REPLY);
    expect(finishes).toEqual(['stop']);
    expect(usage!.completion_tokens).toBe(3);
  });

  it('is SSE on the wire, echoes first, and ends with data: [DONE]', async () => {
    const res = await post({ ...SCRIPTED, stream: true, echo: true });
    expect(res.status).toBe(200);
    expect(res.headers.get('content-type')).toMatch(/^text\/event-stream/);
    const body = await res.text();
    expect(body.endsWith('data: [DONE]\n\n')).toBe(true);
    const chunks = body
      .split('\n\n')
      .filter((e) => e.startsWith('data: {'))
      .map((e) => JSON.parse(e.slice(6)) as { choices: Array<{ text: string }> });
    expect(chunks[0]!.choices[0]!.text).toBe('Hi\n');
    expect(chunks.map((c) => c.choices[0]?.text ?? '').join('')).toBe(`Hi\n${DEFAULT_TINY_REPLY}`);
    expect(body).not.toContain('"usage"');
  });

  it('streams several prompts as choices told apart by index, each with its own finish', async () => {
    const stream = await client.completions.create({
      model: MODEL_ID,
      prompt: ['Hi\n', 'Hey'],
      max_tokens: 6,
      stream: true,
      temperature: 0,
    });
    const texts = ['', ''];
    const finishes: Array<Array<string | null>> = [[], []];
    for await (const chunk of stream) {
      for (const c of chunk.choices) {
        texts[c.index] += c.text;
        if (c.finish_reason !== null) finishes[c.index]!.push(c.finish_reason);
      }
    }
    expect(texts[0]).toBe(DEFAULT_TINY_REPLY);
    expect(texts[1]).not.toBe('');
    expect(finishes).toEqual([['stop'], ['length']]);
  });

  it('streams logprobs with each text chunk', async () => {
    const stream = await client.completions.create({ ...SCRIPTED, stream: true, logprobs: 1 });
    const tokens: string[] = [];
    const offsets: number[] = [];
    for await (const chunk of stream) {
      const lp = chunk.choices[0]?.logprobs;
      if (lp) {
        tokens.push(...lp.tokens!);
        offsets.push(...lp.text_offset!);
      }
    }
    expect(tokens.join('')).toBe(DEFAULT_TINY_REPLY);
    expect(offsets[0]).toBe(0);
    expect(offsets).toEqual([...offsets].sort((a, b) => a - b));
  });
});

describe('completions refusals', () => {
  const create = (extra: Record<string, unknown>) =>
    client.completions.create({ model: MODEL_ID, prompt: 'x', max_tokens: 1, ...extra } as never);

  it.each([
    [{ n: 2 }, 'n', 'unsupported_parameter'],
    [{ best_of: 3 }, 'best_of', 'unsupported_parameter'],
    [{ suffix: 'end' }, 'suffix', 'unsupported_parameter'],
    [{ logit_bias: { '5': 1 } }, 'logit_bias', 'unsupported_parameter'],
    [{ echo: true, logprobs: 1 }, 'echo', 'unsupported_parameter'],
    [{ echo: true, prompt: [1, 2] }, 'echo', 'unsupported_parameter'],
    [{ prompt: undefined }, 'prompt', 'missing_required_parameter'],
    [{ prompt: 5 }, 'prompt', 'invalid_type'],
    [{ prompt: [] }, 'prompt', 'empty_array'],
    [{ prompt: ['a', 3] }, 'prompt[1]', 'invalid_type'],
    [{ prompt: [1, -2] }, 'prompt[1]', 'invalid_type'],
    [{ prompt: [[1], []] }, 'prompt[1]', 'empty_array'],
    [{ max_tokens: 0 }, 'max_tokens', 'invalid_value'],
    [{ temperature: 3 }, 'temperature', 'invalid_value'],
    [{ top_p: 'high' }, 'top_p', 'invalid_type'],
    [{ logprobs: 21 }, 'logprobs', 'invalid_value'],
    [{ logprobs: true }, 'logprobs', 'invalid_type'],
    [{ stop: ['a', 'b', 'c', 'd', 'e'] }, 'stop', 'invalid_value'],
    [{ seed: 1.5 }, 'seed', 'invalid_type'],
    [{ echo: 'yes' }, 'echo', 'invalid_type'],
    [{ stream_options: { include_usage: true } }, 'stream_options', 'invalid_value'],
    [{ messages: [] }, 'messages', 'unknown_parameter'],
  ])('%j -> 400 naming %s', async (extra, param, code) => {
    await expect(create(extra)).rejects.toMatchObject({ status: 400, param, code });
  });

  it('accepts the harmless values of refused fields (n: 1, best_of: 1, suffix: null, an empty logit_bias)', async () => {
    const r = await create({ n: 1, best_of: 1, suffix: null, logit_bias: {}, user: 'u' });
    expect(r.choices).toHaveLength(1);
  });

  it('an unknown model is a 404, a bad key a 401, malformed JSON a 400, all in the documented shape', async () => {
    await expect(create({ model: 'local/other', stream: true })).rejects.toMatchObject({
      status: 404,
      code: 'model_not_found',
    });
    const unauthorized = await post({ model: MODEL_ID, prompt: 'x' }, { authorization: 'Bearer hk_nope' });
    expect(unauthorized.status).toBe(401);
    expect(await unauthorized.json()).toMatchObject({
      error: { type: 'authentication_error', code: 'invalid_api_key' },
    });
    const malformed = await post('{"model":');
    expect(malformed.status).toBe(400);
    expect(await malformed.json()).toMatchObject({ error: { type: 'invalid_request_error', code: 'invalid_json' } });
  });
});
