import { getLlama, type Llama, LlamaGrammar, LlamaLogLevel } from 'node-llama-cpp';
import { beforeAll, describe, expect, it } from 'vitest';
import { jsonObjectGrammar, jsonSchemaToGrammar } from '../../src/grammar/json-schema-grammar.ts';
import { toolCallGrammar } from '../../src/grammar/tool-call-grammar.ts';
import { sampleGbnf } from '../helpers/gbnf-sampler.ts';
import { SCHEMA_FIXTURES } from '../helpers/schema-fixtures.ts';
import { WEATHER_TOOLS } from '../helpers/tool-fixtures.ts';

/**
 * The grammars Hearth writes, checked by llama.cpp's own grammar parser and matcher (the code the engine's
 * grammar sampler runs): each parses, admits what the test walker samples from it, and refuses a document
 * the schema forbids. No model is loaded.
 */
let llama: Llama;

/** Whether llama.cpp's grammar admits exactly `text` (node-llama-cpp's internal matcher). */
function admits(grammar: string, text: string): boolean {
  const g = new LlamaGrammar(llama, { grammar }) as unknown as { _testText(t: string): boolean };
  return g._testText(text);
}

beforeAll(async () => {
  llama = await getLlama({ gpu: false, build: 'never', logLevel: LlamaLogLevel.error, progressLogs: false });
});

describe('llama.cpp accepts the JSON Schema grammars', () => {
  for (const f of SCHEMA_FIXTURES) {
    it(f.name, () => {
      const grammar = jsonSchemaToGrammar(f.schema, { strict: f.strict });
      for (let seed = 1; seed <= 15; seed++) {
        const text = sampleGbnf(grammar, seed);
        expect(admits(grammar, text), text).toBe(true);
      }
      expect(admits(grammar, f.invalid), f.invalid).toBe(false);
    });
  }

  it('json_object', () => {
    const grammar = jsonObjectGrammar();
    expect(admits(grammar, '{"a": [1, {"b": null}], "c": "d"}')).toBe(true);
    expect(admits(grammar, '[1]')).toBe(false);
  });
});

describe('llama.cpp accepts the tool-call grammars', () => {
  it('required, parallel', () => {
    const grammar = toolCallGrammar(WEATHER_TOOLS, { choice: 'required', parallel: true });
    for (let seed = 1; seed <= 15; seed++) expect(admits(grammar, sampleGbnf(grammar, seed))).toBe(true);
    expect(
      admits(
        grammar,
        '<tool_call>\n{"name": "get_weather", "arguments": {"city": "Paris", "unit": "celsius"}}\n</tool_call>\n<tool_call>\n{"name": "get_time", "arguments": {"zone": "UTC"}}\n</tool_call>',
      ),
    ).toBe(true);
    expect(admits(grammar, '<tool_call>\n{"name": "launch", "arguments": {}}\n</tool_call>')).toBe(false);
  });

  it('a named function only', () => {
    const grammar = toolCallGrammar(WEATHER_TOOLS, { choice: { name: 'get_time' }, parallel: true });
    expect(admits(grammar, '<tool_call>\n{"name": "get_time", "arguments": {"zone": "CET"}}\n</tool_call>')).toBe(true);
    expect(admits(grammar, '<tool_call>\n{"name": "get_weather", "arguments": {"city": "Oslo"}}\n</tool_call>')).toBe(
      false,
    );
  });
});
