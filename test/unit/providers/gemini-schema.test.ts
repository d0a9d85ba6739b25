import { describe, expect, it } from 'vitest';
import { toGeminiSchema } from '../../../src/providers/gemini-schema.ts';

describe('toGeminiSchema (JSON Schema -> Gemini Schema)', () => {
  it('upper-cases types, turns null unions into nullable, keeps only Gemini fields', () => {
    expect(
      toGeminiSchema(
        {
          $schema: 'https://json-schema.org/draft/2020-12/schema',
          type: 'object',
          properties: {
            name: { type: 'string', minLength: 1 },
            age: { type: ['integer', 'null'], minimum: 0 },
            tags: { type: 'array', items: { type: 'string' }, maxItems: 3 },
          },
          required: ['name'],
          additionalProperties: false,
        },
        'response_format',
      ),
    ).toEqual({
      type: 'OBJECT',
      properties: {
        name: { type: 'STRING', minLength: 1 },
        age: { type: 'INTEGER', nullable: true, minimum: 0 },
        tags: { type: 'ARRAY', items: { type: 'STRING' }, maxItems: 3 },
      },
      required: ['name'],
    });
  });

  it('inlines local $refs, maps oneOf to anyOf, const to enum, several types to anyOf', () => {
    expect(
      toGeminiSchema(
        {
          type: 'object',
          properties: {
            a: { $ref: '#/$defs/Color' },
            b: { oneOf: [{ type: 'string' }, { type: 'number' }] },
            c: { const: 'fixed' },
            d: { type: ['string', 'number'] },
          },
          $defs: { Color: { type: 'string', enum: ['red', 'blue'] } },
        },
        'response_format',
      ),
    ).toEqual({
      type: 'OBJECT',
      properties: {
        a: { type: 'STRING', enum: ['red', 'blue'] },
        b: { anyOf: [{ type: 'STRING' }, { type: 'NUMBER' }] },
        c: { enum: ['fixed'] },
        d: { anyOf: [{ type: 'STRING' }, { type: 'NUMBER' }] },
      },
    });
  });

  it('refuses recursive, non-local and over-deep schemas with a 400 naming the field', () => {
    const recursive = {
      type: 'object',
      properties: { next: { $ref: '#/$defs/Node' } },
      $defs: { Node: { type: 'object', properties: { next: { $ref: '#/$defs/Node' } } } },
    };
    expect(() => toGeminiSchema(recursive, 'tools[0].function.parameters')).toThrow(
      expect.objectContaining({ status: 400, param: 'tools[0].function.parameters' }),
    );
    expect(() => toGeminiSchema({ $ref: 'https://example.com/schema.json' }, 'response_format')).toThrow(
      expect.objectContaining({ status: 400, param: 'response_format' }),
    );
    let deep: Record<string, unknown> = { type: 'string' };
    for (let i = 0; i < 40; i++) deep = { type: 'array', items: deep };
    expect(() => toGeminiSchema(deep, 'response_format')).toThrow(expect.objectContaining({ status: 400 }));
  });
});
