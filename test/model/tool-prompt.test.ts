/**
 * Prompts with tools (src/worker/prompt-builder.ts + chat-history.ts) on the project's own tiny GGUFs:
 * a model whose Jinja template renders tools (Qwen 2.5's) gets them, its tool_calls and tool messages from
 * that template; a template without tool support (ChatML) or no template at all gets Hearth's Hermes
 * instructions and text; a request without tools gets the same prompt as before.
 */
import { getLlama, LlamaLogLevel, type Llama, type LlamaModel } from 'node-llama-cpp';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { QWEN25_TEMPLATE } from '../helpers/chat-templates.ts';
import { ensureTinyChatModel, ensureTinyModel } from '../../models/test-model-path.ts';
import type { ChatMessage, FunctionTool } from '../../src/protocol/chat-request.ts';
import { TOOL_CALL_CLOSE, TOOL_CALL_OPEN } from '../../src/protocol/tool-call-syntax.ts';
import { PromptBuilder } from '../../src/worker/prompt-builder.ts';

const WEATHER: FunctionTool = {
  name: 'get_weather',
  description: 'Current weather of a city',
  parameters: {
    type: 'object',
    properties: { city: { type: 'string' }, unit: { type: 'string', enum: ['c', 'f'] } },
    required: ['city'],
  },
  strict: false,
};
const TIME: FunctionTool = { name: 'local_time', parameters: { type: 'object', properties: {} }, strict: true };

/** A full tool round: two parallel calls, their results, and the turn the model is to write now. */
const ROUND: ChatMessage[] = [
  { role: 'system', content: 'Answer briefly.' },
  { role: 'user', content: 'Weather in Paris and Lyon?' },
  {
    role: 'assistant',
    content: '',
    toolCalls: [
      { id: 'call_a', name: 'get_weather', arguments: '{"city":"Paris"}' },
      { id: 'call_b', name: 'get_weather', arguments: '{"city":"Lyon","unit":"c"}' },
    ],
  },
  { role: 'tool', toolCallId: 'call_a', content: '{"temp":21}' },
  { role: 'tool', toolCallId: 'call_b', content: '{"temp":19}' },
];

describe('prompts with tools', () => {
  let llama: Llama;
  const models: LlamaModel[] = [];
  let qwen: PromptBuilder;
  let chatml: PromptBuilder;
  let bare: PromptBuilder;

  beforeAll(async () => {
    llama = await getLlama({ gpu: false, build: 'never', logLevel: LlamaLogLevel.error });
    const load = async (path: string) => {
      const model = await llama.loadModel({ modelPath: path, vocabOnly: true });
      models.push(model);
      return new PromptBuilder(model);
    };
    qwen = await load(await ensureTinyModel({ chatTemplate: QWEN25_TEMPLATE }));
    chatml = await load(await ensureTinyChatModel());
    bare = await load(await ensureTinyModel());
  });
  afterAll(async () => {
    for (const m of models) await m.dispose();
  });

  it("renders tools with the model's own template when it supports them (Qwen 2.5)", () => {
    expect(qwen.wrapperSpeaksHermes).toBe(true);
    const text = qwen.text([{ role: 'user', content: 'Weather in Paris?' }], [WEATHER, TIME]);
    // The template's own tool section, with each function as {"type":"function","function":{...}} JSON.
    expect(text).toContain('# Tools\n\nYou may call one or more functions');
    const tools = text
      .slice(text.indexOf('<tools>\n') + 8, text.indexOf('\n</tools>'))
      .split('\n')
      .map((l) => JSON.parse(l) as unknown);
    expect(tools).toEqual([
      {
        type: 'function',
        function: { name: 'get_weather', description: WEATHER.description, parameters: WEATHER.parameters },
      },
      { type: 'function', function: { name: 'local_time', parameters: TIME.parameters } },
    ]);
    expect(text).toContain(
      `${TOOL_CALL_OPEN}\n{"name": <function-name>, "arguments": <args-json-object>}\n${TOOL_CALL_CLOSE}`,
    );
    expect(text.endsWith('<|im_start|>user\nWeather in Paris?<|im_end|>\n<|im_start|>assistant\n')).toBe(true);
  });

  it('renders assistant tool_calls and tool results through that template, continuing the same turn', async () => {
    const text = qwen.text(ROUND, [WEATHER]);
    expect(text).toContain('<|im_start|>system\nAnswer briefly.\n\n# Tools');
    expect(text).toContain(
      '<|im_start|>assistant\n<tool_call>\n{"name": "get_weather", "arguments": {"city": "Paris"}}\n</tool_call>\n' +
        '<tool_call>\n{"name": "get_weather", "arguments": {"city": "Lyon", "unit": "c"}}\n</tool_call><|im_end|>\n',
    );
    expect(text).toContain(
      '<|im_start|>user\n<tool_response>\n{"temp": 21}\n</tool_response>\n<tool_response>\n{"temp": 19}\n</tool_response><|im_end|>\n',
    );
    expect(text.endsWith('</tool_response><|im_end|>\n<|im_start|>assistant\n')).toBe(true);
    expect((await qwen.build(ROUND, [WEATHER])).tokens.length).toBeGreaterThan(50);
  });

  it('falls back to Hermes instructions in the model template when the template ignores tools (ChatML)', () => {
    expect(chatml.wrapperSpeaksHermes).toBe(false);
    const text = chatml.text(ROUND, [WEATHER, TIME]);
    expect(text).toContain('<|im_start|>system\nAnswer briefly.\n\n# Tools\n');
    expect(text).toContain(
      JSON.stringify({
        type: 'function',
        function: { name: 'get_weather', description: WEATHER.description, parameters: WEATHER.parameters },
      }),
    );
    expect(text).toContain(
      JSON.stringify({ type: 'function', function: { name: 'local_time', parameters: TIME.parameters } }),
    );
    expect(text).toContain(
      `within ${TOOL_CALL_OPEN}${TOOL_CALL_CLOSE} XML tags:\n${TOOL_CALL_OPEN}\n{"name": <function-name>, "arguments": <args-json-object>}\n${TOOL_CALL_CLOSE}`,
    );
    expect(text).not.toContain('||call'); // node-llama-cpp's own function syntax would not be parsed back
    expect(text).toContain(
      `<|im_start|>assistant\n${TOOL_CALL_OPEN}\n{"name":"get_weather","arguments":{"city":"Paris"}}\n${TOOL_CALL_CLOSE}\n${TOOL_CALL_OPEN}`,
    );
    expect(text).toContain(
      '<|im_start|>user\n<tool_response>\n{"temp":21}\n</tool_response>\n<tool_response>\n{"temp":19}\n</tool_response><|im_end|>',
    );
    expect(text.endsWith('<|im_start|>assistant\n')).toBe(true);
  });

  it('uses a ChatML prompt with Hermes instructions for a model without any template', async () => {
    expect(bare.toolWrapperName).toBe('ChatML');
    const text = bare.text([{ role: 'user', content: 'What time is it?' }], [TIME]);
    expect(text).toMatch(/^(BOS)?<\|im_start\|>system\n# Tools\n/); // BOS: the model's own, written out
    expect(text).toContain('"name":"local_time"');
    expect(text.endsWith('<|im_start|>user\nWhat time is it?<|im_end|>\n<|im_start|>assistant\n')).toBe(true);
    expect((await bare.build([{ role: 'user', content: 'What time is it?' }], [TIME])).stops).toContain('<|im_end|>');
  });

  it('leaves prompts without tools as they were', () => {
    const plain: ChatMessage[] = [
      { role: 'system', content: 'S' },
      { role: 'user', content: 'Hi' },
      { role: 'assistant', content: 'Hello' },
      { role: 'user', content: 'Bye' },
    ];
    for (const b of [qwen, chatml, bare]) {
      const state = b.wrapper.generateContextState({
        chatHistory: [
          { type: 'system', text: 'S' },
          { type: 'user', text: 'Hi' },
          { type: 'model', response: ['Hello'] },
          { type: 'user', text: 'Bye' },
          { type: 'model', response: [] },
        ],
      });
      expect(b.text(plain)).toBe(state.contextText.toString());
      expect(b.text(plain, [])).not.toContain('# Tools');
    }
  });
});
