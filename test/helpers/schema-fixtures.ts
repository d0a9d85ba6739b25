/** JSON Schemas the grammar tests convert, sample and validate (each with one document it must reject). */
export interface SchemaFixture {
  name: string;
  schema: Record<string, unknown>;
  strict?: boolean;
  /** A JSON text the grammar must not admit. */
  invalid: string;
}

export const SCHEMA_FIXTURES: SchemaFixture[] = [
  { name: 'string', schema: { type: 'string' }, invalid: '12' },
  { name: 'number', schema: { type: 'number' }, invalid: '"1"' },
  { name: 'boolean', schema: { type: 'boolean' }, invalid: 'null' },
  { name: 'null', schema: { type: 'null' }, invalid: 'false' },
  { name: 'any value', schema: {}, invalid: '{"a" 1}' },
  {
    name: 'flat object with required and optional properties',
    schema: {
      type: 'object',
      properties: {
        name: { type: 'string', maxLength: 12 },
        age: { type: 'integer' },
        admin: { type: 'boolean' },
        note: { type: 'string', maxLength: 5 },
      },
      required: ['name', 'age'],
    },
    invalid: '{"age": 3}',
  },
  {
    name: 'nested objects and arrays',
    schema: {
      type: 'object',
      properties: {
        user: {
          type: 'object',
          properties: {
            id: { type: 'integer', minimum: 1, maximum: 999 },
            tags: { type: 'array', items: { type: 'string', maxLength: 4 }, maxItems: 3 },
          },
          required: ['id', 'tags'],
          additionalProperties: false,
        },
        scores: { type: 'array', items: { type: 'number' }, minItems: 2, maxItems: 4 },
      },
      required: ['user', 'scores'],
      additionalProperties: false,
    },
    invalid: '{"user": {"id": 1, "tags": []}, "scores": [1]}',
  },
  { name: 'string enum', schema: { type: 'string', enum: ['red', 'green', 'blue "quoted"'] }, invalid: '"yellow"' },
  { name: 'mixed enum', schema: { enum: [1, 'two', null, true, { three: [3] }] }, invalid: '2' },
  { name: 'const', schema: { const: { kind: 'fixed', n: [1, 2] } }, invalid: '{"kind": "fixed"}' },
  {
    name: 'anyOf',
    schema: {
      anyOf: [{ type: 'integer', minimum: 0, maximum: 9 }, { type: 'string', maxLength: 3 }, { type: 'null' }],
    },
    invalid: '10',
  },
  {
    name: 'oneOf of disjoint objects',
    schema: {
      oneOf: [
        {
          type: 'object',
          properties: { kind: { const: 'circle' }, r: { type: 'number' } },
          required: ['kind', 'r'],
          additionalProperties: false,
        },
        {
          type: 'object',
          properties: { kind: { const: 'square' }, side: { type: 'integer' } },
          required: ['kind', 'side'],
          additionalProperties: false,
        },
      ],
    },
    invalid: '{"kind": "circle", "side": 1}',
  },
  { name: 'nullable via type list', schema: { type: ['string', 'null'], maxLength: 4 }, invalid: '1' },
  {
    name: '$ref and $defs (recursive tree)',
    schema: {
      $defs: {
        node: {
          type: 'object',
          properties: {
            value: { type: 'integer', minimum: -5, maximum: 5 },
            children: { type: 'array', items: { $ref: '#/$defs/node' }, maxItems: 2 },
          },
          required: ['value', 'children'],
          additionalProperties: false,
        },
      },
      $ref: '#/$defs/node',
    },
    invalid: '{"value": 6, "children": []}',
  },
  {
    name: 'definitions (draft 7)',
    schema: {
      definitions: { color: { enum: ['r', 'g'] } },
      type: 'array',
      items: { $ref: '#/definitions/color' },
      minItems: 1,
      maxItems: 3,
    },
    invalid: '[]',
  },
  {
    name: 'array min/max items',
    schema: { type: 'array', items: { type: 'boolean' }, minItems: 2, maxItems: 3 },
    invalid: '[true]',
  },
  {
    name: 'tuple (prefixItems)',
    schema: { type: 'array', prefixItems: [{ type: 'integer' }, { type: 'string', maxLength: 2 }], items: false },
    invalid: '[1]',
  },
  {
    name: 'integer ranges',
    schema: {
      type: 'array',
      prefixItems: [
        { type: 'integer', minimum: -120, maximum: 35 },
        { type: 'integer', minimum: 7, maximum: 1234 },
        { type: 'integer', exclusiveMinimum: 0 },
        { type: 'integer', maximum: -3 },
      ],
      items: false,
    },
    invalid: '[36, 7, 1, -3]',
  },
  {
    name: 'zod-style safe integer',
    schema: { type: 'integer', minimum: -9007199254740991, maximum: 9007199254740991 },
    invalid: '1.5',
  },
  { name: 'string lengths', schema: { type: 'string', minLength: 2, maxLength: 3 }, invalid: '"a"' },
  {
    name: 'string formats',
    schema: {
      type: 'object',
      properties: {
        d: { type: 'string', format: 'date' },
        t: { type: 'string', format: 'time' },
        dt: { type: 'string', format: 'date-time' },
        u: { type: 'string', format: 'uuid' },
      },
      required: ['d', 't', 'dt', 'u'],
      additionalProperties: false,
    },
    invalid: '{"d": "2024-13-01", "t": "10:00:00Z", "dt": "2024-01-01T10:00:00Z", "u": "x"}',
  },
  {
    name: 'strict: every property required, no extras',
    schema: {
      type: 'object',
      properties: { a: { type: 'boolean' }, b: { type: 'object', properties: { c: { type: 'null' } } } },
    },
    strict: true,
    invalid: '{"a": true}',
  },
  {
    name: 'free-form map (additionalProperties schema)',
    schema: { type: 'object', additionalProperties: { type: 'integer', minimum: 0, maximum: 3 } },
    invalid: '{"k": 4}',
  },
  {
    name: 'a required key no property describes: of additionalProperties',
    schema: {
      type: 'object',
      properties: { a: { type: 'boolean' } },
      required: ['a', 'n'],
      additionalProperties: { type: 'integer', minimum: 5, maximum: 6 },
    },
    invalid: '{"a": true, "n": 7}',
  },
  {
    name: 'allOf with one member',
    schema: { allOf: [{ type: 'object', properties: { x: { type: 'boolean' } }, required: ['x'] }] },
    invalid: '{}',
  },
  {
    name: 'odd property names',
    schema: {
      type: 'object',
      properties: { 'a b': { type: 'boolean' }, 'quote"d': { type: 'null' }, ünï: { type: 'boolean' } },
      required: ['a b', 'quote"d', 'ünï'],
    },
    invalid: '{"a b": true}',
  },
  // Keywords beside anyOf / allOf / $ref constrain every branch too (intersected; they were once overwritten by the branch's).
  {
    name: 'anyOf with sibling properties and required',
    schema: {
      type: 'object',
      properties: { id: { type: 'integer' } },
      required: ['id'],
      anyOf: [
        { properties: { a: { type: 'string', maxLength: 3 } }, required: ['a'] },
        { properties: { b: { type: 'boolean' } }, required: ['b'] },
      ],
    },
    invalid: '{"b": true}',
  },
  {
    name: 'allOf of two objects, one by $ref',
    schema: {
      $defs: {
        base: { type: 'object', properties: { id: { type: 'integer', minimum: 0, maximum: 9 } }, required: ['id'] },
      },
      allOf: [{ $ref: '#/$defs/base' }, { properties: { name: { type: 'string', maxLength: 4 } }, required: ['name'] }],
    },
    invalid: '{"name": "x"}',
  },
  {
    name: 'allOf intersecting bounds',
    schema: {
      allOf: [
        { type: 'integer', minimum: 0, maximum: 50 },
        { type: 'number', minimum: 10, maximum: 99 },
      ],
    },
    invalid: '51',
  },
  {
    name: '$ref with sibling constraints',
    schema: {
      $defs: { word: { type: 'string', maxLength: 8 } },
      type: 'object',
      properties: { w: { $ref: '#/$defs/word', minLength: 2, maxLength: 3 } },
      required: ['w'],
    },
    invalid: '{"w": "abcd"}',
  },
];

/**
 * A nested object with a required array and strings (json-close test and bench:json-close-cost). Its shortest
 * completion, `{"n":"","o":{"t":[],"s":""}}`, is 28 tokens of the tiny model's character-sized vocabulary.
 */
export const NESTED_SCHEMA = {
  type: 'object',
  properties: {
    n: { type: 'string' },
    o: {
      type: 'object',
      properties: { t: { type: 'array', items: { type: 'string' } }, s: { type: 'string' } },
      required: ['t', 's'],
      additionalProperties: false,
    },
  },
  required: ['n', 'o'],
  additionalProperties: false,
} as const;
