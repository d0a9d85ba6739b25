import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { DEFAULT_TINY_REPLY } from '../../../models/tiny-llama.ts';
import type { HearthProcess } from '../../helpers/hearth-process.ts';
import { postChat } from '../../helpers/chat-request.ts';
import { serveModel } from '../../helpers/served-model.ts';

/**
 * Issue 9, item 4: a prompt of characters outside the vocabulary (150,000 emoji, 600 KB, under the body
 * limit) is refused with 400 context_length_exceeded without stalling the engine: a small request sent
 * while it is being handled completes normally. Refused early on the main thread from the prompt's bytes
 * (user text), or by the worker's tokenizer stopping at the context size (text the byte bound does not
 * count, such as an assistant turn). No timing is asserted: bench/tokenize-stall.ts measures it.
 */
const MODEL_ID = 'local/tiny-chat';
const EMOJI = '\u{1F600}'.repeat(150_000);
let hearth: HearthProcess;

beforeAll(async () => {
  hearth = (await serveModel(MODEL_ID, ['--context-size', '2048', '--slots', '2'])).hearth;
});
afterAll(() => hearth?.stop());

function chat(
  messages: Array<{ role: string; content: string }>,
  extra: Record<string, unknown> = {},
): Promise<Response> {
  return postChat(hearth, { model: MODEL_ID, messages, temperature: 0, ...extra });
}

/** A small streaming request (4 tokens at most); resolves with the whole stream's text. */
async function smallStream(): Promise<{ status: number; text: string }> {
  const r = await chat([{ role: 'user', content: 'Say hello.' }], { stream: true, max_tokens: 4 });
  return { status: r.status, text: await r.text() };
}

async function expectContextLengthExceeded(r: Response): Promise<string> {
  expect(r.status).toBe(400);
  const body = (await r.json()) as { error: { code: string; type: string; param: string; message: string } };
  expect(body.error).toMatchObject({
    code: 'context_length_exceeded',
    type: 'invalid_request_error',
    param: 'messages',
  });
  return body.error.message;
}

describe('a prompt that cannot fit the context', () => {
  it('150,000 emoji from the user: 400 context_length_exceeded from the byte bound; a concurrent small request completes', async () => {
    const big = chat([{ role: 'user', content: EMOJI }]);
    const small = smallStream();
    const message = await expectContextLengthExceeded(await big);
    expect(message).toMatch(/maximum context length is 2048 tokens; the messages use at least \d+ tokens/);
    const s = await small;
    expect(s.status).toBe(200);
    expect(s.text).toContain('"finish_reason":"stop"');
    expect(s.text.endsWith('data: [DONE]\n\n')).toBe(true);
  });

  it("150,000 emoji in an assistant turn: 400 from the worker's tokenizer, which stops at the context size; a concurrent small request completes", async () => {
    const big = chat([
      { role: 'user', content: 'Hi' },
      { role: 'assistant', content: EMOJI },
      { role: 'user', content: 'Go on.' },
    ]);
    const small = smallStream();
    const message = await expectContextLengthExceeded(await big);
    expect(message).toMatch(/the messages use at least (\d+) tokens/);
    const counted = Number(/at least (\d+)/.exec(message)![1]);
    expect(counted).toBeGreaterThanOrEqual(2048);
    expect(counted).toBeLessThan(150_000 * 4); // it stopped counting early
    const s = await small;
    expect(s.status).toBe(200);
    expect(s.text.endsWith('data: [DONE]\n\n')).toBe(true);
  });

  it('keeps serving afterwards', async () => {
    const r = await chat([{ role: 'user', content: 'Say hello.' }]);
    expect(r.status).toBe(200);
    const body = (await r.json()) as { choices: Array<{ message: { content: string } }> };
    expect(body.choices[0]!.message.content).toBe(DEFAULT_TINY_REPLY);
  });
});
