import { describe, expect, it } from 'vitest';
import type { ChatDelta } from '../../../src/protocol/chat-delta.ts';
import { toolCallGrammar } from '../../../src/grammar/tool-call-grammar.ts';
import { ToolCallStreamParser } from '../../../src/protocol/tool-call-parser.ts';
import { sampleGbnf } from '../../helpers/gbnf-sampler.ts';
import { WEATHER_TOOLS } from '../../helpers/tool-fixtures.ts';

interface Assembled {
  content: string;
  calls: Array<{ id: string; name: string; arguments: string }>;
}

/** Folds deltas as an OpenAI client does, checking the fragment order rules on the way. */
function assemble(deltas: ChatDelta[]): Assembled {
  const out: Assembled = { content: '', calls: [] };
  for (const d of deltas) {
    if (d.type === 'content') out.content += d.text;
    else if (d.type === 'tool_call') {
      if (d.id !== undefined) {
        expect(d.index).toBe(out.calls.length);
        expect(d.name).toBeTypeOf('string');
        out.calls.push({ id: d.id, name: d.name!, arguments: d.arguments });
      } else {
        expect(d.index).toBe(out.calls.length - 1);
        expect(d.name).toBeUndefined();
        out.calls[d.index]!.arguments += d.arguments;
      }
    }
  }
  return out;
}

function parse(pieces: string[], declared: string[] | null = ['get_weather', 'get_time']): Assembled {
  let n = 0;
  const parser = new ToolCallStreamParser(declared ? new Set(declared) : null, () => `call_${n++}`);
  const deltas = pieces.flatMap((p) => parser.push(p));
  deltas.push(...parser.end());
  for (const d of deltas) if (d.type === 'content') expect(d.text).not.toBe('');
  return assemble(deltas);
}

/** Every way of cutting `text` in two, and in single characters. */
function splits(text: string): string[][] {
  const chars = Array.from(text);
  const out: string[][] = [chars];
  for (let i = 1; i < chars.length; i++) out.push([chars.slice(0, i).join(''), chars.slice(i).join('')]);
  return out;
}

/** What a reply that is nothing but one call of `name` with `args` assembles to. */
const onlyCall = (name: string, args: string): Assembled => ({
  content: '',
  calls: [{ id: 'call_0', name, arguments: args }],
});

const CASES: Array<[string, string, Assembled]> = [
  ['plain text', 'Hello there, no calls.\n', { content: 'Hello there, no calls.\n', calls: [] }],
  [
    'one call',
    '<tool_call>\n{"name": "get_weather", "arguments": {"city": "Paris"}}\n</tool_call>',
    onlyCall('get_weather', '{"city": "Paris"}'),
  ],
  [
    'text then two calls with nested braces',
    'Let me check.\n<tool_call>\n{"name": "get_weather", "arguments": {"city": "Oslo", "opts": {"a": {"b": "}"}}}}\n</tool_call>\n<tool_call>\n{"name":"get_time","arguments":{"zone":"UTC"}}</tool_call>\n',
    {
      content: 'Let me check.',
      calls: [
        { id: 'call_0', name: 'get_weather', arguments: '{"city": "Oslo", "opts": {"a": {"b": "}"}}}' },
        { id: 'call_1', name: 'get_time', arguments: '{"zone":"UTC"}' },
      ],
    },
  ],
  [
    'arguments before name (parsed whole)',
    '<tool_call>{"arguments": {"zone": "CET"}, "name": "get_time"}</tool_call>',
    onlyCall('get_time', '{"zone":"CET"}'),
  ],
  [
    'an undeclared function stays content',
    'x <tool_call>{"name": "rm_rf", "arguments": {}}</tool_call>',
    { content: 'x <tool_call>{"name": "rm_rf", "arguments": {}}</tool_call>', calls: [] },
  ],
  ['a lone tag-like text', 'a <tool_ca b', { content: 'a <tool_ca b', calls: [] }],
  [
    'unfinished call at the end',
    '<tool_call>\n{"name": "get_time", "arguments": {"zone": "U',
    onlyCall('get_time', '{"zone": "U'),
  ],
  // Cut by max_tokens after the arguments (seen on stories260K with a forced call): the body's brace and the start
  // of the closing tag are the wrapper's, not the arguments' (clients parse arguments as JSON).
  [
    'a call cut inside its closing tag',
    '<tool_call>\n{ "name" : "get_weather" , "arguments" : { "city" :" S toys." }}\n</t',
    onlyCall('get_weather', '{ "city" :" S toys." }'),
  ],
  [
    'a call cut one character before its closing tag ends',
    '<tool_call>\n{ "name" : "get_weather" , "arguments" : { "city" :"" }}\n</tool_call',
    onlyCall('get_weather', '{ "city" :"" }'),
  ],
  [
    'a call cut after its body',
    '<tool_call>{"name": "get_weather", "arguments": {"city": "X"}}',
    onlyCall('get_weather', '{"city": "X"}'),
  ],
  // Cut inside the arguments: a brace that could have been the body's belongs to them after all.
  [
    'a call cut after an inner object',
    '<tool_call>{"name": "get_weather", "arguments": {"city": {"a": 1 }',
    onlyCall('get_weather', '{"city": {"a": 1 }'),
  ],
  ['escaped name', '<tool_call>{"name": "get\\u005ftime", "arguments": {}}</tool_call>', onlyCall('get_time', '{}')],
];

describe('ToolCallStreamParser', () => {
  for (const [name, text, expected] of CASES) {
    it(`${name}: same result for every split`, () => {
      expect(parse([text])).toEqual(expected);
      for (const pieces of splits(text)) expect(parse(pieces), JSON.stringify(pieces)).toEqual(expected);
    });
  }

  it('parses what the required-call grammar produces, every split, arguments valid JSON', () => {
    const grammar = toolCallGrammar(WEATHER_TOOLS, { choice: 'required', parallel: true });
    for (let seed = 1; seed <= 12; seed++) {
      const text = sampleGbnf(grammar, seed);
      const whole = parse([text]);
      expect(whole.content).toBe('');
      expect(whole.calls.length).toBe(text.split('<tool_call>').length - 1);
      for (const c of whole.calls) {
        expect(['get_weather', 'get_time']).toContain(c.name);
        expect(typeof JSON.parse(c.arguments)).toBe('object');
      }
      for (const pieces of splits(text)) expect(parse(pieces)).toEqual(whole);
    }
  });

  it('carries logprobs on the content they belong to', () => {
    const parser = new ToolCallStreamParser(null);
    const lp = [{ token: 'Hi', logprob: -0.1, bytes: [72, 105], top: [] }];
    expect(parser.push('Hi', lp)).toEqual([{ type: 'content', text: 'Hi', logprobs: lp }]);
  });
});
