import type { JsonSchema } from '../protocol/chat-request.ts';
import { GrammarError } from './gbnf.ts';
import { ANNOTATIONS } from './schema-keywords.ts';

/**
 * The intersection of two JSON Schemas as one schema, for the converter's `allOf` members and for the
 * constraints an `anyOf` / `oneOf` shares with each of its branches: a document valid against the result is
 * valid against both. Keywords only one side has are kept; where both have one: `properties` unite (a name
 * both declare gets the intersection of its two schemas), `required` unites, `type` lists intersect (integer
 * within number), `enum`s intersect, lower bounds take the larger and upper bounds the smaller, annotations
 * keep the first. Anything else the two sides both constrain differently, and `additionalProperties` where
 * the two declare different properties (it would then forbid the other side's), is refused with a
 * GrammarError naming `keyword` (the keyword that asked for the intersection). `$ref`s are resolved by the
 * caller first. Pure.
 */
export function intersectSchemas(a: JsonSchema, b: JsonSchema, keyword: string, path: string): JsonSchema {
  const refuse = (what: string): never => {
    throw new GrammarError(
      `JSON Schema keyword '${keyword}' (at ${path}) is supported where its schemas do not both constrain ${what} differently`,
      keyword,
    );
  };
  const closes = (s: JsonSchema) => s.additionalProperties !== undefined && s.additionalProperties !== true;
  if ((closes(a) || closes(b)) && !sameKeys(a.properties, b.properties))
    refuse("'additionalProperties' with different 'properties'");
  const out: JsonSchema = copy(a);
  for (const [k, v] of Object.entries(b)) {
    const mine = Object.hasOwn(out, k) ? out[k] : undefined;
    if (mine === undefined || equal(mine, v)) {
      put(out, k, v);
      continue;
    }
    if (ANNOTATIONS.has(k)) continue;
    if (k === 'properties' && isObject(mine) && isObject(v)) {
      const props = copy(mine);
      for (const [name, schema] of Object.entries(v)) {
        const other = Object.hasOwn(props, name) ? props[name] : undefined;
        put(
          props,
          name,
          other === undefined ? schema : intersectSubschemas(other, schema, keyword, `${path}/properties/${name}`),
        );
      }
      out[k] = props;
    } else if (k === 'required' && Array.isArray(mine) && Array.isArray(v)) {
      out[k] = [...new Set([...mine, ...v])];
    } else if (k === 'type') {
      out[k] = intersectTypes(mine, v) ?? refuse("'type'");
    } else if (k === 'enum' && Array.isArray(mine) && Array.isArray(v)) {
      const both = mine.filter((x) => v.some((y) => equal(x, y)));
      out[k] = both.length > 0 ? both : refuse("'enum'");
    } else if (LOWER_BOUNDS.has(k) && typeof mine === 'number' && typeof v === 'number') {
      out[k] = Math.max(mine, v);
    } else if (UPPER_BOUNDS.has(k) && typeof mine === 'number' && typeof v === 'number') {
      out[k] = Math.min(mine, v);
    } else {
      refuse(`'${k}'`);
    }
  }
  return out;
}

/** Two subschemas, either possibly boolean. */
function intersectSubschemas(a: unknown, b: unknown, keyword: string, path: string): unknown {
  if (a === true) return b;
  if (b === true) return a;
  if (a === false || b === false) return false;
  if (!isObject(a) || !isObject(b)) return equal(a, b) ? a : false;
  if (a.$ref !== undefined || b.$ref !== undefined) {
    throw new GrammarError(
      `JSON Schema keyword '${keyword}' (at ${path}) is supported where a property both declare has no '$ref'`,
      keyword,
    );
  }
  return intersectSchemas(a, b, keyword, path);
}

const LOWER_BOUNDS = new Set(['minimum', 'exclusiveMinimum', 'minLength', 'minItems']);
const UPPER_BOUNDS = new Set(['maximum', 'exclusiveMaximum', 'maxLength', 'maxItems']);

/** The types both admit (a list, or one name); null when none. */
function intersectTypes(a: unknown, b: unknown): unknown {
  const list = (t: unknown): unknown[] => (Array.isArray(t) ? t : [t]);
  const both: unknown[] = [];
  for (const t of list(a)) {
    const other = list(b);
    if (other.includes(t)) both.push(t);
    else if (t === 'integer' && other.includes('number')) both.push('integer');
    else if (t === 'number' && other.includes('integer')) both.push('integer');
  }
  const unique = [...new Set(both)];
  return unique.length === 0 ? null : unique.length === 1 ? unique[0] : unique;
}

/** A shallow copy whose keys are all own data properties ('__proto__' from a client's JSON included). */
function copy(o: Record<string, unknown>): Record<string, unknown> {
  const out: Record<string, unknown> = {};
  for (const [k, v] of Object.entries(o)) put(out, k, v);
  return out;
}

/** `o[k] = v` as an own data property, never a prototype change. */
function put(o: Record<string, unknown>, k: string, v: unknown): void {
  Object.defineProperty(o, k, { value: v, enumerable: true, writable: true, configurable: true });
}

function sameKeys(a: unknown, b: unknown): boolean {
  const keys = (p: unknown) => (isObject(p) ? Object.keys(p).sort().join('\0') : '');
  return keys(a) === keys(b);
}

function isObject(v: unknown): v is Record<string, unknown> {
  return typeof v === 'object' && v !== null && !Array.isArray(v);
}

/** JSON equality (key order ignored). */
export function equal(a: unknown, b: unknown): boolean {
  if (a === b) return true;
  if (
    typeof a !== 'object' ||
    typeof b !== 'object' ||
    a === null ||
    b === null ||
    Array.isArray(a) !== Array.isArray(b)
  )
    return false;
  if (Array.isArray(a)) return a.length === (b as unknown[]).length && a.every((x, i) => equal(x, (b as unknown[])[i]));
  const ka = Object.keys(a);
  const kb = Object.keys(b);
  return (
    ka.length === kb.length &&
    ka.every((k) => Object.hasOwn(b, k) && equal((a as Record<string, unknown>)[k], (b as Record<string, unknown>)[k]))
  );
}
