import OpenAI from 'openai';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { type HearthProcess, startHearthProcess } from '../../helpers/hearth-process.ts';
import { realTestModel } from '../../helpers/test-model.ts';

/** `hearth serve --model stories260K.gguf` answers the official SDK with real text (skipped where no real model exists). */
const modelPath = realTestModel();
const suite = modelPath ? describe : describe.skip;
if (!modelPath)
  console.warn('[real-model] skipped: set HEARTH_TEST_MODEL or provide ../shared/models/stories260K.gguf');

suite('a real trained model', () => {
  let hearth: HearthProcess;
  let client: OpenAI;
  let id: string;
  beforeAll(async () => {
    hearth = await startHearthProcess({ args: ['--model', modelPath!, '--slots', '2'] });
    await hearth.waitReady();
    client = new OpenAI({ apiKey: hearth.key, baseURL: `${hearth.baseUrl}/api/inference/v1`, maxRetries: 0 });
    id = (await client.models.list()).data[0]!.id;
  });
  afterAll(async () => {
    await hearth?.stop();
  });

  const storyWords = /\b(the|a|was|and|she|he|to|little|day|they)\b/i;
  /** A greedy request of up to 48 tokens that continues `story`: the body Chat Completions and Messages share. */
  const continuing = (story: string) => ({
    model: id,
    messages: [{ role: 'user' as const, content: story }],
    temperature: 0,
    max_tokens: 48,
  });

  it('writes English text (JSON mode)', async () => {
    const r = await client.chat.completions.create(continuing('Once upon a time, there was a little girl'));
    const text = r.choices[0]!.message.content!;
    expect(text.length).toBeGreaterThan(20);
    expect(text).toMatch(storyWords);
    expect(r.usage!.completion_tokens).toBeGreaterThan(0);
  });

  it('writes English text (streaming)', async () => {
    const stream = await client.chat.completions.create({ ...continuing('Once upon a time'), stream: true });
    let text = '';
    for await (const c of stream) text += c.choices[0]?.delta.content ?? '';
    expect(text).toMatch(storyWords);
  });

  it('continues a raw prompt through legacy completions, the same text again for the same seed', async () => {
    const prompt = 'Once upon a time, there was a little girl named';
    const r = await client.completions.create({ model: id, prompt, temperature: 0, max_tokens: 32, echo: true });
    expect(r.choices[0]!.text.startsWith(prompt)).toBe(true);
    expect(r.choices[0]!.text.slice(prompt.length)).toMatch(storyWords);
    const sampled = () => client.completions.create({ model: id, prompt, temperature: 1, seed: 42, max_tokens: 24 });
    const [a, b] = [await sampled(), await sampled()];
    expect(a.choices[0]!.text).toBe(b.choices[0]!.text);
  });

  it('answers the Messages API with English text', async () => {
    const res = await fetch(`${hearth.baseUrl}/api/inference/v1/messages`, {
      method: 'POST',
      headers: { 'x-api-key': hearth.key, 'anthropic-version': '2023-06-01', 'content-type': 'application/json' },
      body: JSON.stringify(continuing('Once upon a time, there was a little girl')),
    });
    const m = (await res.json()) as {
      content: Array<{ type: string; text: string }>;
      usage: { output_tokens: number };
    };
    expect(m.content[0]!.text).toMatch(storyWords);
    expect(m.usage.output_tokens).toBeGreaterThan(0);
  });
});
