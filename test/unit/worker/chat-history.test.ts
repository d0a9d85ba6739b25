import { describe, expect, it } from 'vitest';
import type { ChatMessage } from '../../../src/protocol/chat-request.ts';
import {
  functionCallHistory,
  hermesCallText,
  hermesTextHistory,
  toChatModelFunctions,
} from '../../../src/worker/chat-history.ts';

const call = (id: string, args: string) => ({ id, name: 'lookup', arguments: args });

describe('chat history for tools', () => {
  it('attaches each tool result to its call by id and continues the same model turn', () => {
    const messages: ChatMessage[] = [
      { role: 'user', content: 'q' },
      { role: 'assistant', content: 'Checking.', toolCalls: [call('a', '{"k":1}'), call('b', 'not json')] },
      { role: 'tool', toolCallId: 'b', content: 'plain result' },
      { role: 'tool', toolCallId: 'a', content: '{"v":2}' },
      { role: 'assistant', content: 'Done.' },
      { role: 'user', content: 'thanks' },
    ];
    expect(functionCallHistory(messages)).toEqual([
      { type: 'user', text: 'q' },
      {
        type: 'model',
        response: [
          'Checking.',
          { type: 'functionCall', name: 'lookup', params: { k: 1 }, result: { v: 2 }, startsNewChunk: true },
          { type: 'functionCall', name: 'lookup', params: 'not json', result: 'plain result' },
          'Done.',
        ],
      },
      { type: 'user', text: 'thanks' },
      { type: 'model', response: [] },
    ]);
  });

  it('generates after pending tool results inside the turn that made the calls', () => {
    const history = functionCallHistory([
      { role: 'user', content: 'q' },
      { role: 'assistant', content: '', toolCalls: [call('a', '{}')] },
      { role: 'tool', toolCallId: 'a', content: '1' },
    ]);
    expect(history).toHaveLength(2);
    expect(history[1]).toEqual({
      type: 'model',
      response: [{ type: 'functionCall', name: 'lookup', params: {}, result: 1, startsNewChunk: true }],
    });
  });

  it('keeps a tool message that answers no known call as a tool_response user turn', () => {
    expect(functionCallHistory([{ role: 'tool', toolCallId: 'zz', content: 'x' }])[0]).toEqual({
      type: 'user',
      text: '<tool_response>\nx\n</tool_response>',
    });
  });

  it('writes calls, results and instructions as Hermes text', () => {
    expect(hermesCallText(call('a', '{"k": 1}'))).toBe(
      '<tool_call>\n{"name":"lookup","arguments":{"k":1}}\n</tool_call>',
    );
    const tools = [{ name: 'lookup', description: 'Find', parameters: { type: 'object' }, strict: false }];
    const history = hermesTextHistory(
      [
        { role: 'user', content: 'q' },
        { role: 'assistant', content: '', toolCalls: [call('a', '{}')] },
        { role: 'tool', toolCallId: 'a', content: 'r1' },
      ],
      tools,
    );
    expect(history[0]).toMatchObject({ type: 'system' });
    expect((history[0] as { text: string }).text).toContain(
      '{"type":"function","function":{"name":"lookup","description":"Find","parameters":{"type":"object"}}}',
    );
    expect(history.slice(1)).toEqual([
      { type: 'user', text: 'q' },
      { type: 'model', response: ['<tool_call>\n{"name":"lookup","arguments":{}}\n</tool_call>'] },
      { type: 'user', text: '<tool_response>\nr1\n</tool_response>' },
      { type: 'model', response: [] },
    ]);
    expect(toChatModelFunctions(tools)).toEqual({ lookup: { description: 'Find', params: { type: 'object' } } });
  });
});
