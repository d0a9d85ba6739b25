import Anthropic from '@anthropic-ai/sdk';
import OpenAI from 'openai';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { THINKING_CHATML_TEMPLATE } from '../../../models/chat-templates.ts';
import { ensureTinyModel } from '../../../models/test-model-path.ts';
import { type HearthProcess, startHearthProcess } from '../../helpers/hearth-process.ts';
import { tinyChatModel } from '../../helpers/test-model.ts';

/**
 * Reasoning kept apart from the answer (issue #26 item 5) end to end over a real `hearth serve`: a tiny model
 * whose template marks thinking (Qwen3's `<think>` switch) and whose scripted reply thinks first. Chat
 * completions carry it as `reasoning_content` (JSON and stream), the Responses API as a `reasoning` item,
 * the Messages API as a `thinking` block; the answer never holds the think tags.
 */
const MODEL_ID = 'local/tiny-thinker';
const THOUGHT = 'Plan a greeting.';
const ANSWER = 'Hello there!';
let hearth: HearthProcess;
let openai: OpenAI;
let anthropic: Anthropic;

beforeAll(async () => {
  const model = await ensureTinyModel({
    chatTemplate: THINKING_CHATML_TEMPLATE,
    reply: `<think>${THOUGHT}</think>${ANSWER}`,
  });
  hearth = await startHearthProcess({ args: ['--model', model, '--model-id', MODEL_ID, '--slots', '2'] });
  await hearth.waitReady();
  openai = new OpenAI({ apiKey: hearth.key, baseURL: `${hearth.baseUrl}/api/inference/v1`, maxRetries: 0 });
  anthropic = new Anthropic({ apiKey: hearth.key, baseURL: `${hearth.baseUrl}/api/inference`, maxRetries: 0 });
});

afterAll(async () => {
  await hearth?.stop();
});

const messages = [{ role: 'user' as const, content: 'Say hello.' }];

describe('reasoning split', () => {
  it('chat completions: message.reasoning_content, the answer alone in content', async () => {
    const r = await openai.chat.completions.create({ model: MODEL_ID, messages });
    const message = r.choices[0]!.message as (typeof r.choices)[0]['message'] & { reasoning_content?: string };
    expect(message.reasoning_content).toBe(THOUGHT);
    expect(message.content).toBe(ANSWER);
  });

  it('chat completions stream: delta.reasoning_content first, then delta.content', async () => {
    const stream = await openai.chat.completions.create({ model: MODEL_ID, messages, stream: true });
    let reasoning = '';
    let content = '';
    let order = '';
    for await (const chunk of stream) {
      const delta = chunk.choices[0]?.delta as { content?: string; reasoning_content?: string } | undefined;
      if (delta?.reasoning_content) {
        reasoning += delta.reasoning_content;
        if (!order.endsWith('r')) order += 'r';
      }
      if (delta?.content) {
        content += delta.content;
        if (!order.endsWith('c')) order += 'c';
      }
    }
    expect([reasoning, content, order]).toEqual([THOUGHT, ANSWER, 'rc']);
  });

  it('Responses API: a reasoning item before the message', async () => {
    const r = await openai.responses.create({ model: MODEL_ID, input: 'Say hello.' });
    expect(r.output.map((i) => i.type)).toEqual(['reasoning', 'message']);
    expect(r.output[0]).toMatchObject({ type: 'reasoning', content: [{ type: 'reasoning_text', text: THOUGHT }] });
    expect(r.output_text).toBe(ANSWER);
    // The output sent back as input (as SDK users do) is taken; its reasoning item stays out of the prompt.
    const next = await openai.responses.create({
      model: MODEL_ID,
      input: [...(r.output as never[]), { role: 'user', content: 'Again.' }],
      store: false,
    });
    expect(next.output_text).toBe(ANSWER);
  });

  it('Responses API stream: reasoning_text deltas, then output_text', async () => {
    const stream = openai.responses.stream({ model: MODEL_ID, input: 'Say hello.' });
    const types: string[] = [];
    let reasoning = '';
    for await (const e of stream) {
      types.push(e.type);
      if (e.type === 'response.reasoning_text.delta') reasoning += e.delta;
    }
    expect(reasoning).toBe(THOUGHT);
    expect(types.indexOf('response.reasoning_text.done')).toBeLessThan(types.indexOf('response.output_text.delta'));
    expect((await stream.finalResponse()).output_text).toBe(ANSWER);
  });

  it('Messages API: a thinking block, then the text block (JSON and the SDK stream)', async () => {
    const m = await anthropic.messages.create({ model: MODEL_ID, max_tokens: 64, messages });
    expect(m.content).toEqual([
      { type: 'thinking', thinking: THOUGHT, signature: '' },
      { type: 'text', text: ANSWER },
    ]);
    const final = await anthropic.messages.stream({ model: MODEL_ID, max_tokens: 64, messages }).finalMessage();
    expect(final.content.map((b) => b.type)).toEqual(['thinking', 'text']);
    expect((final.content[0] as { thinking: string }).thinking).toBe(THOUGHT);
    expect((final.content[1] as { text: string }).text).toBe(ANSWER);
  });

  it('under a grammar (json_object) nothing is split: the reply is the JSON the grammar forced', async () => {
    const r = await openai.chat.completions.create({
      model: MODEL_ID,
      messages,
      response_format: { type: 'json_object' },
      max_tokens: 24,
    });
    const message = r.choices[0]!.message as { content: string | null; reasoning_content?: string };
    expect(message.reasoning_content).toBeUndefined();
    expect(message.content!.trimStart().startsWith('{')).toBe(true);
  });

  it("reasoning_effort none (or minimal) switches thinking off through the template's switch: the empty thinking block joins the prompt", async () => {
    const promptTokens = async (extra: object) =>
      (await openai.chat.completions.create({ model: MODEL_ID, messages, max_tokens: 4, ...extra } as never)).usage!
        .prompt_tokens;
    const plain = await promptTokens({});
    expect(await promptTokens({ reasoning_effort: 'high' })).toBe(plain);
    expect(await promptTokens({ reasoning_effort: 'none' })).toBeGreaterThan(plain);
    expect(await promptTokens({ reasoning_effort: 'minimal' })).toBe(await promptTokens({ reasoning_effort: 'none' }));
    const responseInput = async (reasoning: object) =>
      (
        await openai.responses.create({
          model: MODEL_ID,
          input: 'Say hello.',
          reasoning,
          max_output_tokens: 4,
          store: false,
        })
      ).usage!.input_tokens;
    expect(await responseInput({ effort: 'none' })).toBeGreaterThan(await responseInput({}));
  });
});

describe('reasoning_effort on a model whose template has no thinking switch', () => {
  it('is a 400 naming reasoning_effort', async () => {
    const plainModel = await startHearthProcess({
      args: ['--model', await tinyChatModel(), '--model-id', 'local/tiny-chat', '--slots', '1', '--engine', 'instant'],
    });
    try {
      await plainModel.waitReady();
      const client = new OpenAI({
        apiKey: plainModel.key,
        baseURL: `${plainModel.baseUrl}/api/inference/v1`,
        maxRetries: 0,
      });
      await expect(
        client.chat.completions.create({ model: 'local/tiny-chat', messages, reasoning_effort: 'low' }),
      ).rejects.toMatchObject({ status: 400, param: 'reasoning_effort' });
    } finally {
      await plainModel.stop();
    }
  });
});
