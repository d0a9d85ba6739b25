import OpenAI from 'openai';
import type { ChatCompletionTool } from 'openai/resources/chat/completions';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { ensureTinyChatModel } from '../../../models/test-model-path.ts';
import type { HearthProcess } from '../../helpers/hearth-process.ts';
import { serveModel } from '../../helpers/served-model.ts';

/**
 * `tool_choice: "auto"`: a model that writes a call in its own text (here the tiny chat model scripted to
 * reply with one) gets it parsed back into a function call, over a real `hearth serve` with the official SDK.
 * No grammar is involved. The Responses API part runs on its own; the chat-completions part needs the
 * ChatDelta responder that renders tool_calls.
 */
let hearth: HearthProcess;
let client: OpenAI;
const MODEL_ID = 'local/tiny-caller';
const REPLY = 'Ok. <tool_call>{"name": "get_time", "arguments": {"zone": "CET"}}</tool_call>';

const TOOLS: ChatCompletionTool[] = [
  {
    type: 'function',
    function: {
      name: 'get_time',
      parameters: { type: 'object', properties: { zone: { type: 'string' } }, required: ['zone'] },
    },
  },
];

beforeAll(async () => {
  const model = await ensureTinyChatModel({ embeddingLength: 128, reply: REPLY });
  ({ hearth, client } = await serveModel(MODEL_ID, ['--slots', '1'], model));
});
afterAll(() => hearth?.stop());

describe('tool calls parsed from free text (auto)', () => {
  it('Responses API: text before the call is a message, the call a function_call item', async () => {
    const r = await client.responses.create({
      model: MODEL_ID,
      input: 'What time is it in Paris?',
      tools: [
        {
          type: 'function',
          name: 'get_time',
          parameters: TOOLS[0]!.type === 'function' ? TOOLS[0]!.function.parameters! : {},
          strict: false,
        },
      ],
    });
    expect(r.status).toBe('completed');
    expect(r.output.map((o) => o.type)).toEqual(['message', 'function_call']);
    expect(r.output_text).toBe('Ok.');
    expect(r.output[1]).toMatchObject({
      type: 'function_call',
      name: 'get_time',
      arguments: '{"zone": "CET"}',
      status: 'completed',
    });
    expect((r.output[1] as { call_id: string }).call_id).toMatch(/^call_/);
  });

  it('without tools the same text stays content', async () => {
    const r = await client.responses.create({ model: MODEL_ID, input: 'What time is it in Paris?' });
    expect(r.output_text).toBe(REPLY);
  });

  it('chat completions: message.tool_calls, finish_reason tool_calls, JSON and streaming', async () => {
    const messages = [{ role: 'user' as const, content: 'What time is it in Paris?' }];
    const r = await client.chat.completions.create({ model: MODEL_ID, messages, tools: TOOLS });
    expect(r.choices[0]!.finish_reason).toBe('tool_calls');
    expect(r.choices[0]!.message.content).toBe('Ok.');
    expect(r.choices[0]!.message.tool_calls).toEqual([
      {
        id: expect.stringMatching(/^call_/),
        type: 'function',
        function: { name: 'get_time', arguments: '{"zone": "CET"}' },
      },
    ]);
    const final = await client.chat.completions
      .stream({ model: MODEL_ID, messages, tools: TOOLS })
      .finalChatCompletion();
    expect(final.choices[0]!.finish_reason).toBe('tool_calls');
    expect((final.choices[0]!.message.tool_calls![0] as { function: unknown }).function).toEqual({
      name: 'get_time',
      arguments: '{"zone": "CET"}',
    });
  });
});
