import { describe, expect, it } from 'vitest';
import { argumentsObject, jsonDepth, MAX_ARGUMENT_DEPTH, toolNameOf } from '../../../src/providers/tool-arguments.ts';
import { anthropicAdapter } from '../../../src/providers/anthropic.ts';
import { geminiAdapter } from '../../../src/providers/gemini.ts';
import { makeCall, optionsFor } from './helpers.ts';

describe('tool-call arguments and results sent to vendors that take objects', () => {
  it('measures JSON nesting without recursion, ignoring brackets inside strings', () => {
    expect(jsonDepth('{"a":[1,{"b":"[[[{{{"}]}')).toBe(3);
    expect(jsonDepth('"\\"[["')).toBe(0);
    expect(jsonDepth('['.repeat(100_000))).toBe(100_000);
  });

  it('parses arguments into an object, or answers a 400 naming the field (not JSON, not an object, too deep)', () => {
    expect(argumentsObject('{"city":"Paris"}', 'p', 'anthropic')).toEqual({ city: 'Paris' });
    expect(argumentsObject('', 'p', 'anthropic')).toEqual({});
    for (const bad of [
      '{oops',
      '[1,2]',
      '"text"',
      `{"a":${'['.repeat(MAX_ARGUMENT_DEPTH)}${']'.repeat(MAX_ARGUMENT_DEPTH)}}`,
    ]) {
      expect(() => argumentsObject(bad, 'messages[1].tool_calls[0].function.arguments', 'anthropic')).toThrow(
        expect.objectContaining({ status: 400, param: 'messages[1].tool_calls[0].function.arguments' }),
      );
    }
  });

  it('finds the function a tool message answers, else a 400 naming its tool_call_id', () => {
    const messages = [
      { role: 'assistant' as const, content: '', toolCalls: [{ id: 'c1', name: 'f', arguments: '{}' }] },
      { role: 'tool' as const, content: 'ok', toolCallId: 'c1' },
      { role: 'tool' as const, content: 'ok', toolCallId: 'c9' },
    ];
    expect(toolNameOf(messages, 1, 'gemini')).toBe('f');
    expect(() => toolNameOf(messages, 2, 'gemini')).toThrow(
      expect.objectContaining({ status: 400, param: 'messages[2].tool_call_id' }),
    );
  });

  it('a 100,000-deep arguments text is a 400, never a stack overflow, for Anthropic and Gemini', () => {
    const deep = `{"a":${'['.repeat(100_000)}${']'.repeat(100_000)}}`;
    const messages = [
      { role: 'user' as const, content: 'hi' },
      { role: 'assistant' as const, content: '', toolCalls: [{ id: 'c1', name: 'f', arguments: deep }] },
      { role: 'tool' as const, content: deep, toolCallId: 'c1' },
    ];
    for (const adapter of [anthropicAdapter, geminiAdapter]) {
      expect(() => adapter.buildRequest(makeCall({ messages }), false, optionsFor(adapter.name))).toThrow(
        expect.objectContaining({ status: 400, param: 'messages[1].tool_calls[0].function.arguments' }),
      );
    }
  });
});
