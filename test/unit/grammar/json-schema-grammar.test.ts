import { Ajv2020 } from 'ajv/dist/2020.js';
import addFormatsModule from 'ajv-formats';
import { describe, expect, it } from 'vitest';
import { GrammarError } from '../../../src/grammar/gbnf.ts';
import { integerRangeExpression } from '../../../src/grammar/integer-range-grammar.ts';
import { GrammarCache } from '../../../src/grammar/grammar-cache.ts';
import { jsonObjectGrammar, jsonSchemaToGrammar } from '../../../src/grammar/json-schema-grammar.ts';
import { toolCallGrammar } from '../../../src/grammar/tool-call-grammar.ts';
import { sampleGbnf } from '../../helpers/gbnf-sampler.ts';
import { SCHEMA_FIXTURES } from '../../helpers/schema-fixtures.ts';
import { thrownBy } from '../../helpers/thrown.ts';

const addFormats = addFormatsModule as unknown as (ajv: Ajv2020) => void;
const SAMPLES = 40;

function validator(schema: Record<string, unknown>) {
  const ajv = new Ajv2020({ strict: false, allErrors: true });
  addFormats(ajv);
  return ajv.compile(schema);
}

/** The schema OpenAI strict mode implies: every object has all its properties and no others. */
function strictened(schema: unknown): unknown {
  if (Array.isArray(schema)) return schema.map(strictened);
  if (typeof schema !== 'object' || schema === null) return schema;
  const out: Record<string, unknown> = Object.fromEntries(Object.entries(schema).map(([k, v]) => [k, strictened(v)]));
  if (out.properties) {
    out.required = Object.keys(out.properties as object);
    out.additionalProperties = false;
  }
  return out;
}

describe('jsonSchemaToGrammar: every sampled document parses and validates (ajv)', () => {
  for (const f of SCHEMA_FIXTURES) {
    it(f.name, () => {
      const grammar = jsonSchemaToGrammar(f.schema, { strict: f.strict });
      const validate = validator((f.strict ? strictened(f.schema) : f.schema) as Record<string, unknown>);
      const seen = new Set<string>();
      for (let seed = 1; seed <= SAMPLES; seed++) {
        const text = sampleGbnf(grammar, seed);
        let doc: unknown;
        expect(() => {
          doc = JSON.parse(text);
        }, text).not.toThrow();
        expect(validate(doc), `${text}\n${JSON.stringify(validate.errors)}`).toBe(true);
        seen.add(text);
      }
      // The walk explores: a grammar that admits a single document would make this test meaningless.
      if (!['null', 'const'].includes(f.name)) expect(seen.size).toBeGreaterThan(1);
    });
  }
});

describe('integer ranges', () => {
  const cases: Array<[number | null, number | null]> = [
    [0, 9],
    [1, 5],
    [-120, 35],
    [7, 1234],
    [-50, -3],
    [100, 100],
    [99, 101],
    [0, 1_000_000],
    [null, -3],
    [1, null],
  ];
  for (const [min, max] of cases) {
    it(`admits exactly ${min}..${max}`, () => {
      const grammar = `root ::= ${integerRangeExpression(min, max)}\n`;
      const lo = min ?? -Number.MAX_SAFE_INTEGER;
      const hi = max ?? Number.MAX_SAFE_INTEGER;
      for (let seed = 1; seed <= 60; seed++) {
        const text = sampleGbnf(grammar, seed, 40);
        expect(text).toMatch(/^(0|-?[1-9][0-9]*)$/);
        const n = Number(text);
        expect(n >= lo && n <= hi, `${text} outside ${lo}..${hi}`).toBe(true);
      }
    });
  }
});

describe('refusals name the keyword', () => {
  const cases: Array<[Record<string, unknown>, string]> = [
    [{ type: 'string', pattern: '^a+$' }, 'pattern'],
    [{ type: 'object', properties: { a: { type: 'number', multipleOf: 2 } } }, 'multipleOf'],
    [{ type: 'array', items: { type: 'integer' }, uniqueItems: true }, 'uniqueItems'],
    [{ type: 'string', format: 'email' }, 'format'],
    [{ type: 'number', minimum: 0.5 }, 'minimum'],
    [{ not: { type: 'null' } }, 'not'],
    [{ $ref: 'https://example.com/schema.json' }, '$ref'],
    [{ $ref: '#/$defs/missing' }, '$ref'],
    [
      {
        allOf: [
          { type: 'object', properties: { a: { type: 'integer' } }, additionalProperties: false },
          { type: 'object', properties: { b: { type: 'string' } } },
        ],
      },
      'allOf',
    ],
    [{ allOf: [{ type: 'string', maxLength: 3 }, { type: 'integer' }] }, 'allOf'],
    [
      { type: 'object', properties: { id: { type: 'integer' } }, anyOf: [{ properties: { id: { type: 'string' } } }] },
      'anyOf',
    ],
    [{ type: 'object', minProperties: 1 }, 'minProperties'],
    [{ type: 'strin' }, 'type'],
    [{ type: 'object', properties: {}, required: ['a'], additionalProperties: false }, 'required'],
  ];
  for (const [schema, keyword] of cases) {
    it(`${keyword}: ${JSON.stringify(schema)}`, () => {
      const error = thrownBy(() => jsonSchemaToGrammar(schema), GrammarError);
      expect(error.keyword).toBe(keyword);
      expect(error.message).toContain(keyword);
    });
  }

  it('many integer ranges past the grammar bounds: too complex, not an empty range', () => {
    const range = { type: 'integer', minimum: -123456789, maximum: 987654321 };
    const names = Array.from({ length: 300 }, (_, i) => `p${i}`);
    const schema = { type: 'object', properties: Object.fromEntries(names.map((n) => [n, range])), required: names };
    const error = thrownBy(() => jsonSchemaToGrammar(schema), GrammarError);
    expect(error.message).not.toContain('leave no integer');
    expect(error.message).toMatch(/too complex|grammar/i);
  });

  it('strict: a required key that is no property is refused (OpenAI refuses it too)', () => {
    const schema = { type: 'object', properties: { a: { type: 'integer' } }, required: ['zzz'] };
    const error = thrownBy(() => jsonSchemaToGrammar(schema, { strict: true }), GrammarError);
    expect(error.keyword).toBe('required');
    expect(error.message).toContain('"zzz"');
  });

  it("intersects a client's '__proto__' property as a property, never a prototype", () => {
    const schema = JSON.parse(
      '{"allOf": [{"type": "object", "properties": {"__proto__": {"type": "integer"}}, "required": ["__proto__"]}, {"properties": {"__proto__": {"minimum": 1, "maximum": 3}}}]}',
    ) as Record<string, unknown>;
    const grammar = jsonSchemaToGrammar(schema);
    expect(grammar).toContain('"\\"__proto__\\""');
    for (let seed = 1; seed <= 10; seed++) expect(sampleGbnf(grammar, seed)).toMatch(/^\{ ?"__proto__" ?: ?[1-3] ?\}$/);
    expect(({} as Record<string, unknown>)['type']).toBeUndefined();
  });

  it('intersects annotations the converter ignores (nullable, contentMediaType) by keeping the first, never refusing', () => {
    const grammar = jsonSchemaToGrammar({
      allOf: [
        { type: 'string', maxLength: 2, nullable: false, contentMediaType: 'text/plain' },
        { nullable: true, contentMediaType: 'text/html' },
      ],
    });
    expect(grammar).toBe(jsonSchemaToGrammar({ type: 'string', maxLength: 2 }));
  });

  describe('recursive schemas', () => {
    const list = {
      type: 'object',
      properties: { next: { anyOf: [{ $ref: '#' }, { type: 'null' }] } },
      required: ['next'],
    };
    it('converts recursion that can end; sampled documents nest and end', () => {
      const grammar = jsonSchemaToGrammar(list);
      for (let seed = 1; seed <= 10; seed++)
        expect(sampleGbnf(grammar, seed, 8)).toMatch(/^(\{ ?"next" ?: ?)+null( ?\})+$/);
    });

    it('refuses a reference back to itself before any output (left recursion, which llama.cpp refuses)', () => {
      const error = thrownBy(() => jsonSchemaToGrammar({ anyOf: [{ $ref: '#' }, { type: 'null' }] }), GrammarError);
      expect(error.keyword).toBe('$ref');
      expect(error.message).toContain('left recursion');
    });

    const endless: Array<[string, Record<string, unknown>, string]> = [
      ['a reference to itself alone', { $ref: '#' }, '"#"'],
      ['an object that requires another', { type: 'object', properties: { a: { $ref: '#' } }, required: ['a'] }, '"#"'],
      [
        'an array of at least one of itself',
        { $defs: { n: { type: 'array', items: { $ref: '#/$defs/n' }, minItems: 1 } }, $ref: '#/$defs/n' },
        '"#/$defs/n"',
      ],
      [
        'an optional property of an endless kind (a trap once opened)',
        {
          type: 'object',
          properties: { x: { type: 'object', properties: { y: { $ref: '#/properties/x' } }, required: ['y'] } },
        },
        '"#/properties/x"',
      ],
    ];
    for (const [what, schema, ref] of endless) {
      it(`refuses a schema with no finite value: ${what}`, () => {
        const error = thrownBy(() => jsonSchemaToGrammar(schema), GrammarError);
        expect(error.message).toContain(`The schema at ${ref} admits no finite JSON value`);
      });
    }

    it('names the tool whose parameters cannot end', () => {
      const tools = [
        { name: 'ok', parameters: list, strict: false },
        {
          name: 'loop',
          parameters: { type: 'object', properties: { a: { $ref: '#' } }, required: ['a'] },
          strict: false,
        },
      ];
      const error = thrownBy(() => toolCallGrammar(tools, { choice: 'required', parallel: false }), GrammarError);
      expect(error.message).toMatch(/^tools\[1\] \(loop\): The schema at "#" admits no finite JSON value/);
    });
  });

  it('refuses a schema that nests without end', () => {
    let schema: Record<string, unknown> = { type: 'boolean' };
    for (let i = 0; i < 100; i++) schema = { type: 'array', items: schema };
    expect(() => jsonSchemaToGrammar(schema)).toThrow(GrammarError);
  });
});

describe('json_object and the cache', () => {
  it('json_object admits objects only', () => {
    for (let seed = 1; seed <= 40; seed++) {
      const text = sampleGbnf(jsonObjectGrammar(), seed, 6);
      const v: unknown = JSON.parse(text);
      expect(typeof v === 'object' && v !== null && !Array.isArray(v), text).toBe(true);
    }
  });

  it('caches by key, evicting the least recently used, and does not cache failures', () => {
    const cache = new GrammarCache(2);
    let builds = 0;
    const build = (schema: Record<string, unknown>) => () => {
      builds++;
      return jsonSchemaToGrammar(schema);
    };
    const g1 = cache.get('a', build({ type: 'string' }));
    expect(cache.get('a', build({ type: 'string' }))).toBe(g1);
    expect(builds).toBe(1);
    cache.get('b', build({ type: 'number' }));
    cache.get('a', build({ type: 'string' })); // a is now the most recent
    cache.get('c', build({ type: 'boolean' })); // evicts b
    expect(cache.size).toBe(2);
    expect(builds).toBe(3);
    cache.get('a', build({ type: 'string' }));
    expect(builds).toBe(3);
    cache.get('b', build({ type: 'number' }));
    expect(builds).toBe(4);
    expect(() => cache.get('bad', build({ type: 'string', pattern: 'x' }))).toThrow(GrammarError);
    expect(cache.size).toBe(2);
  });
});
