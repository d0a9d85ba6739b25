import type { JsonSchema } from '../protocol/chat-request.ts';
import { GRAMMAR_LIMITS, GrammarError } from './gbnf.ts';

/**
 * The JSON Schema vocabulary of the grammar converter (json-schema-grammar.ts): the keywords it refuses, the formats
 * and types it knows, the annotations it ignores, and the guarded reads of a client's schema (own properties only,
 * bounds checked). Pure; a client's schema is untrusted input, so nothing here reaches an Object.prototype member.
 */

/** Keywords a validator checks that the converter cannot express: refused, never silently dropped. */
export const UNSUPPORTED_KEYWORDS = [
  'pattern',
  'patternProperties',
  'multipleOf',
  'not',
  'if',
  'then',
  'else',
  'dependentRequired',
  'dependentSchemas',
  'dependencies',
  'contains',
  'minContains',
  'maxContains',
  'propertyNames',
  'minProperties',
  'maxProperties',
  'unevaluatedProperties',
  'unevaluatedItems',
  '$dynamicRef',
  '$recursiveRef',
] as const;

/** A Map, not an object literal: a client's format must never find an Object.prototype member ('toString'). */
export const SUPPORTED_FORMATS: ReadonlyMap<string, string> = new Map([
  ['date', 'date-string'],
  ['time', 'time-string'],
  ['date-time', 'date-time-string'],
  ['uuid', 'uuid-string'],
]);
export const TYPES = new Set(['string', 'number', 'integer', 'boolean', 'null', 'object', 'array']);
/** Keywords that are only annotations (or structure handled elsewhere): not "siblings" of anyOf/oneOf. */
export const ANNOTATIONS = new Set([
  'title',
  'description',
  'default',
  'examples',
  '$schema',
  '$id',
  '$comment',
  'deprecated',
  'readOnly',
  'writeOnly',
  '$defs',
  'definitions',
  'nullable',
  'contentEncoding',
  'contentMediaType',
]);

/** A schema object (not a boolean schema, not an array). */
export function isSchemaObject(v: unknown): v is JsonSchema {
  return typeof v === 'object' && v !== null && !Array.isArray(v);
}

/** minItems / maxItems / minLength / maxLength: an integer from 0 to GRAMMAR_LIMITS.maxRepetition. */
export function repetitionBound(schema: JsonSchema, key: string, path: string): number | undefined {
  const v = schema[key];
  if (v === undefined) return undefined;
  if (typeof v !== 'number' || !Number.isInteger(v) || v < 0)
    throw new GrammarError(`'${key}' at ${path} must be a non-negative integer`, key);
  if (v > GRAMMAR_LIMITS.maxRepetition)
    throw new GrammarError(
      `'${key}' at ${path} is ${v}; constrained output supports at most ${GRAMMAR_LIMITS.maxRepetition}`,
      key,
    );
  return v;
}

/** `obj[key]` when it is obj's own property: a client's key must never reach an Object.prototype member. */
export function own(obj: Record<string, unknown>, key: string): unknown {
  return Object.hasOwn(obj, key) ? obj[key] : undefined;
}
