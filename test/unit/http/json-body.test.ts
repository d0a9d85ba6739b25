import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { ApiError } from '../../../src/errors/index.ts';
import { nestingExceeds, parseJsonBody } from '../../../src/http/json-body.ts';

const codeOf = (f: () => unknown): string | null => {
  try {
    f();
    return null;
  } catch (err) {
    return err instanceof ApiError ? err.code : 'not an ApiError';
  }
};

/** Exact nesting depth of a parsed JSON value (iterative). */
function depthOf(value: unknown): number {
  let max = 0;
  const stack: Array<[unknown, number]> = [[value, 0]];
  while (stack.length > 0) {
    const [v, d] = stack.pop()!;
    if (typeof v !== 'object' || v === null) continue;
    max = Math.max(max, d + 1);
    for (const child of Array.isArray(v) ? v : Object.values(v)) stack.push([child, d + 1]);
  }
  return max;
}

describe('parseJsonBody', () => {
  it('parses JSON; empty is undefined; malformed is invalid_json; deeper than the bound is json_too_deep', () => {
    expect(parseJsonBody(Buffer.from('{"a":[1,{"b":2}]}'))).toEqual({ a: [1, { b: 2 }] });
    expect(parseJsonBody(Buffer.alloc(0))).toBeUndefined();
    expect(codeOf(() => parseJsonBody(Buffer.from('{"a":')))).toBe('invalid_json');
    expect(codeOf(() => parseJsonBody(Buffer.from('['.repeat(100_000) + ']'.repeat(100_000))))).toBe('json_too_deep');
    expect(codeOf(() => parseJsonBody(Buffer.from('['.repeat(64) + ']'.repeat(64))))).toBeNull();
    expect(codeOf(() => parseJsonBody(Buffer.from('['.repeat(65) + ']'.repeat(65))))).toBe('json_too_deep');
  });

  it('refuses a lone surrogate naming where it is (invalid_unicode); pairs, escaped or raw, pass', () => {
    const paramOf = (text: string): string | null | undefined => {
      try {
        parseJsonBody(Buffer.from(text));
        return undefined;
      } catch (err) {
        expect((err as ApiError).code).toBe('invalid_unicode');
        return (err as ApiError).param;
      }
    };
    expect(paramOf('{"messages":[{"role":"user","content":"a\\ud800"}]}')).toBe('messages[0].content');
    expect(paramOf('{"metadata":{"k":"\\uDFFF"}}')).toBe('metadata.k');
    expect(paramOf('["ok","\\udc00\\ud800"]')).toBe('[1]'); // a reversed pair is two lone halves
    expect(paramOf('"\\ud83d"')).toBeNull(); // the body itself
    expect(paramOf('{"a":{"\\ud800":1}}')).toBe('a'); // a key: named by the object that holds it
    for (const ok of ['{"e":"\\ud83d\\udca1"}', '{"e":"💡"}', '{"e":"\\\\ud800"}', '{"e":"\\u00e9"}'])
      expect(paramOf(ok), ok).toBeUndefined();
  });

  it('does not count brackets inside strings, escaped quotes included', () => {
    const text = JSON.stringify({ s: '['.repeat(500) + '\\"[[[' + '"{{{', t: ['\\', '"]]]"'] });
    expect(nestingExceeds(text, 2)).toBe(false);
    expect(parseJsonBody(Buffer.from(text))).toEqual(JSON.parse(text));
  });

  it('agrees with the real depth of any JSON value (property, fixed seed)', () => {
    fc.assert(
      fc.property(fc.jsonValue({ maxDepth: 8 }), fc.integer({ min: 0, max: 8 }), (value, max) => {
        const text = JSON.stringify(value);
        expect(nestingExceeds(text, max)).toBe(depthOf(JSON.parse(text)) > max);
      }),
      { seed: 20261122, numRuns: 500 },
    );
  });
});
