import { ChatAnthropic } from '@langchain/anthropic';
import { HumanMessage, SystemMessage } from '@langchain/core/messages';
import { tool } from '@langchain/core/tools';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { z } from 'zod';
import { DEFAULT_TINY_REPLY } from '../../../models/tiny-llama.ts';
import { type HearthProcess, startHearthProcess } from '../../helpers/hearth-process.ts';
import { tinyChatModel } from '../../helpers/test-model.ts';

/**
 * LangChain's ChatAnthropic (@langchain/anthropic, over the 0.x Anthropic SDK: the key in `x-api-key`) against
 * Hearth's Messages API on a real `hearth serve` (the tiny chat model's scripted reply): invoke, stream, and a
 * forced tool call whose arguments LangChain parses into `tool_calls` (none left in `invalid_tool_calls`).
 */
let hearth: HearthProcess;
let chat: ChatAnthropic;
const MODEL_ID = 'local/tiny-chat';

beforeAll(async () => {
  hearth = await startHearthProcess({
    args: ['--model', await tinyChatModel(), '--model-id', MODEL_ID, '--slots', '2'],
  });
  await hearth.waitReady();
  chat = new ChatAnthropic({
    model: MODEL_ID,
    apiKey: hearth.key,
    anthropicApiUrl: `${hearth.baseUrl}/api/inference`,
    maxTokens: 64,
    maxRetries: 0,
  });
});

afterAll(async () => {
  await hearth?.stop();
});

describe('ChatAnthropic', () => {
  it('invoke answers with the text and usage', async () => {
    const m = await chat.invoke([new SystemMessage('Be brief.'), new HumanMessage('Hi')]);
    expect(m.content).toBe(DEFAULT_TINY_REPLY);
    expect(m.usage_metadata).toMatchObject({ output_tokens: 3 });
    expect(m.usage_metadata!.input_tokens).toBeGreaterThan(0);
  });

  it('stream delivers the same text in chunks', async () => {
    let text = '';
    let chunks = 0;
    for await (const chunk of await chat.stream([new HumanMessage('Hi')])) {
      if (typeof chunk.content === 'string') text += chunk.content;
      else
        for (const part of chunk.content)
          if (part.type === 'text' || part.type === 'text_delta') text += (part as { text: string }).text;
      chunks++;
    }
    expect(text).toBe(DEFAULT_TINY_REPLY);
    expect(chunks).toBeGreaterThan(1);
  });

  it('a forced tool call comes back as a parsed tool call', async () => {
    const weather = tool(async () => 'sunny', {
      name: 'get_weather',
      description: 'Current weather in a city',
      schema: z.object({ city: z.enum(['Paris', 'Oslo']) }),
    });
    // Greedy, with room for the whole call: random weights under the grammar take many tokens to finish it.
    const greedy = new ChatAnthropic({
      model: MODEL_ID,
      apiKey: hearth.key,
      anthropicApiUrl: `${hearth.baseUrl}/api/inference`,
      maxTokens: 200,
      temperature: 0,
      maxRetries: 0,
    });
    const withTool = greedy.bindTools([weather], { tool_choice: { type: 'tool', name: 'get_weather' } });
    const m = await withTool.invoke([new HumanMessage('Weather in Paris?')]);
    expect(m.invalid_tool_calls ?? []).toEqual([]);
    expect(m.tool_calls).toHaveLength(1);
    expect(m.tool_calls![0]!.name).toBe('get_weather');
    expect(['Paris', 'Oslo']).toContain((m.tool_calls![0]!.args as { city: string }).city);
  });
});
