import { describe, expect, it } from 'vitest';
import { ToolDefinitionError, ToolRegistry } from '../../../src/tools/tool-registry.ts';
import type { ToolDefinition } from '../../../src/tools/tool-definition.ts';

const tool = (input_schema: ToolDefinition['input_schema'], name = 't'): ToolDefinition => ({
  name,
  description: 'd',
  input_schema,
  handler: () => null,
});

describe('ToolRegistry', () => {
  it('adds the built-in healthcheck first', () => {
    const r = new ToolRegistry([tool({ type: 'object', properties: {} })]);
    expect(r.describe().map((t) => t.name)).toEqual(['healthcheck', 't']);
  });

  it('reports nested paths as JSON Pointers with args-prefixed messages', () => {
    const r = new ToolRegistry([
      tool({
        type: 'object',
        properties: {
          items: {
            type: 'array',
            items: { type: 'object', properties: { 'a/b': { type: 'integer' } }, required: ['q~r'] },
          },
        },
      }),
    ]);
    const issues = r.get('t')!.check({ items: [{ 'a/b': 1.5 }] });
    expect(issues).toContainEqual({ path: '/items/0/a~1b', message: 'args/items/0/a~1b must be integer' });
    expect(issues).toContainEqual({ path: '/items/0/q~0r', message: "args/items/0 must have required property 'q~r'" });
  });

  it('fills defaults into args', () => {
    const r = new ToolRegistry([tool({ type: 'object', properties: { n: { type: 'number', default: 3 } } })]);
    const args: Record<string, unknown> = {};
    expect(r.get('t')!.check(args)).toEqual([]);
    expect(args).toEqual({ n: 3 });
  });

  it('shows clients a copy of the schema that later mutation cannot change', () => {
    const schema: ToolDefinition['input_schema'] = { type: 'object', properties: { a: { type: 'string' } } };
    const r = new ToolRegistry([tool(schema)]);
    schema.properties.b = { type: 'string' };
    expect(r.get('t')!.description.input_schema.properties).toEqual({ a: { type: 'string' } });
  });

  it('throws ToolDefinitionError for unknown keywords (strict) and bad types', () => {
    expect(
      () => new ToolRegistry([tool({ type: 'object', properties: { a: { type: 'string', minLenght: 1 } } })]),
    ).toThrow(ToolDefinitionError);
    expect(() => new ToolRegistry([tool({ type: 'object', properties: { a: { type: 'nope' } } })])).toThrow(
      /invalid input_schema/,
    );
  });
});
