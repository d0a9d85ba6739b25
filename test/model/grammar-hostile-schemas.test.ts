import { getLlama, type Llama, LlamaGrammar, LlamaLogLevel } from 'node-llama-cpp';
import { beforeAll, describe, expect, it } from 'vitest';
import { GRAMMAR_LIMITS, GrammarError } from '../../src/grammar/gbnf.ts';
import { jsonSchemaToGrammar } from '../../src/grammar/json-schema-grammar.ts';
import type { JsonSchema } from '../../src/protocol/chat-request.ts';

/**
 * Hostile JSON Schemas against llama.cpp's own grammar parser and matcher (the engine's): whatever a client
 * sends, the converter either refuses it (GrammarError, a 400) or writes a grammar llama.cpp parses and that
 * refuses a document the schema forbids. No model is loaded.
 */
let llama: Llama;

function parse(grammar: string): { _testText(t: string): boolean } {
  return new LlamaGrammar(llama, { grammar }) as unknown as { _testText(t: string): boolean };
}

/** The grammar, or null when the converter refused the schema with a GrammarError naming `keyword`. */
function convert(schema: JsonSchema, keyword: string | null): string | null {
  try {
    return jsonSchemaToGrammar(schema);
  } catch (err) {
    expect(err).toBeInstanceOf(GrammarError);
    expect((err as GrammarError).keyword).toBe(keyword);
    return null;
  }
}

beforeAll(async () => {
  llama = await getLlama({ gpu: false, build: 'never', logLevel: LlamaLogLevel.error, progressLogs: false });
});

describe('repetition bounds (llama.cpp expands x{m,n} into n rules, refuses over 2000, drops a larger max)', () => {
  // Before the fix: maxLength 2500 converted to char{0,2500}, which llama.cpp parsed as char* (a 3,000-char
  // string was admitted), and maxItems 1500 converted to a grammar llama.cpp refused to parse.
  const BOUNDS = [1, 999, 1000, 1001, 1500, 2001, 2500, 100_000];
  const str = (n: number) => JSON.stringify('a'.repeat(n));
  const arr = (n: number) => JSON.stringify(Array(n).fill(1));

  // Each bound: the schema, the text of a value at a size, and the step one past the bound (longer or shorter).
  const BOUND_CASES: Array<
    [keyword: string, schema: (n: number) => JsonSchema, text: (n: number) => string, step: 1 | -1]
  > = [
    ['maxLength', (n) => ({ type: 'string', maxLength: n }), str, 1],
    ['minLength', (n) => ({ type: 'string', minLength: n }), str, -1],
    ['maxItems', (n) => ({ type: 'array', items: { type: 'integer' }, maxItems: n }), arr, 1],
    ['minItems', (n) => ({ type: 'array', items: { type: 'integer' }, minItems: n }), arr, -1],
  ];

  it.each(BOUND_CASES)('%s: a value one past the bound is refused, or the schema is', (keyword, schema, text, step) => {
    for (const n of BOUNDS) {
      const g = convert(schema(n), keyword);
      if (g === null) continue;
      const parsed = parse(g);
      expect(parsed._testText(text(n)), `${keyword} ${n}`).toBe(true);
      expect(parsed._testText(text(n + step)), `${keyword} ${n}`).toBe(false);
    }
  });

  it('the bounds up to the limit all convert (the limit refuses nothing llama.cpp can enforce)', () => {
    const n = GRAMMAR_LIMITS.maxRepetition;
    for (const schema of [
      { type: 'string', minLength: n, maxLength: n },
      { type: 'array', minItems: n, maxItems: n },
    ]) {
      expect(() => parse(jsonSchemaToGrammar(schema))).not.toThrow();
    }
  });
});

describe('the sum of the repetition bounds (what llama.cpp parses the grammar into)', () => {
  const strings = (count: number, maxLength: number) => ({
    type: 'object',
    properties: Object.fromEntries(Array.from({ length: count }, (_, i) => [`p${i}`, { type: 'string', maxLength }])),
  });

  it('is bounded: 33 strings of maxLength 1000 are refused, 32 parse', () => {
    expect(() => jsonSchemaToGrammar(strings(33, 1000))).toThrow(GrammarError);
    expect(() => parse(jsonSchemaToGrammar(strings(32, 1000)))).not.toThrow();
  });

  it('counts a rule once however often the schema reaches it', () => {
    const item = { $ref: '#/$defs/s' };
    const schema = {
      $defs: { s: { type: 'string', maxLength: 1000 } },
      type: 'object',
      properties: Object.fromEntries(Array.from({ length: 100 }, (_, i) => [`p${i}`, item])),
    };
    expect(() => parse(jsonSchemaToGrammar(schema))).not.toThrow();
  });
});

describe('alternatives multiplied through $ref (the paths llama.cpp walks into a rule)', () => {
  function ambiguous(levels: number): JsonSchema {
    const defs: Record<string, unknown> = { [`d${levels}`]: { type: 'string', maxLength: 4 } };
    for (let i = 0; i < levels; i++)
      defs[`d${i}`] = { anyOf: [{ $ref: `#/$defs/d${i + 1}` }, { $ref: `#/$defs/d${i + 1}` }] };
    return { $defs: defs, $ref: '#/$defs/d0' };
  }

  it('2^13 paths parse and match; 2^14 are refused', () => {
    const g = parse(jsonSchemaToGrammar(ambiguous(13)));
    expect(g._testText('"abcd"')).toBe(true);
    expect(g._testText('"abcde"')).toBe(false);
    expect(() => jsonSchemaToGrammar(ambiguous(14))).toThrow(GrammarError);
  });

  it('an enum of 10,000 values converts; 10,001 do not', () => {
    const values = (n: number) => Array.from({ length: n }, (_, i) => i);
    expect(parse(jsonSchemaToGrammar({ enum: values(10_000) }))._testText('9999')).toBe(true);
    expect(() => jsonSchemaToGrammar({ enum: values(10_001) })).toThrow(GrammarError);
  });

  it('type lists and anyOf add their branches: 2 x 5,000 enum values through one $ref are refused', () => {
    const schema = {
      $defs: { e: { enum: Array.from({ length: 5000 }, (_, i) => i) } },
      anyOf: [{ $ref: '#/$defs/e' }, { $ref: '#/$defs/e' }, { type: 'null' }],
    };
    expect(() => jsonSchemaToGrammar(schema)).toThrow(GrammarError);
  });
});

describe('property names that are Object.prototype members', () => {
  it('a required property the schema does not describe must appear, whatever its name', () => {
    // Before the fix `'constructor' in {}` was true, so the property was left out and the grammar admitted only {}.
    for (const name of ['constructor', 'toString', '__proto__', 'valueOf']) {
      const g = parse(jsonSchemaToGrammar({ type: 'object', properties: {}, required: [name] }));
      expect(g._testText('{}'), name).toBe(false);
      expect(g._testText(`{"${name}": 1}`), name).toBe(true);
    }
  });
});

describe('recursive schemas (llama.cpp refuses left recursion and cannot end a rule that never ends)', () => {
  it('recursion that can end parses and matches; what cannot end is refused before llama.cpp sees it', () => {
    const list = {
      type: 'object',
      properties: { next: { anyOf: [{ $ref: '#' }, { type: 'null' }] } },
      required: ['next'],
    };
    const g = parse(jsonSchemaToGrammar(list));
    expect(g._testText('{"next": {"next": null}}')).toBe(true);
    expect(g._testText('{"next": {}}')).toBe(false);
    // Before the check this grammar reached llama.cpp, which refused it (left recursion) in a log line of its own.
    expect(convert({ anyOf: [{ $ref: '#' }, { type: 'null' }] }, '$ref')).toBeNull();
    // And this one llama.cpp accepted: sampling under it nests until max_tokens, never valid JSON.
    expect(convert({ type: 'object', properties: { a: { $ref: '#' } }, required: ['a'] }, null)).toBeNull();
  });
});
