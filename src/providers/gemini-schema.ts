import { unsupportedParameter } from '../errors/errors.ts';
import type { JsonSchema } from '../protocol/chat-request.ts';

/**
 * JSON Schema (as OpenAI clients send it) -> Gemini's `Schema` (an OpenAPI 3.0 subset: `responseSchema`,
 * `functionDeclarations[].parameters`). Gemini rejects keywords outside its subset (additionalProperties,
 * $schema, $ref, ...), so the conversion keeps only what Gemini reads and rewrites the rest:
 *  - `type` upper-cased (STRING, NUMBER, INTEGER, BOOLEAN, ARRAY, OBJECT); a type list with "null" -> the
 *    other type + `nullable: true`; several non-null types -> `anyOf`;
 *  - `const` -> a one-value `enum`; `oneOf` -> `anyOf`; local `$ref`s (#/$defs/..., #/definitions/...) inlined;
 *  - everything else Gemini does not know is dropped (it only loosens the schema, never tightens it).
 * A recursive schema (a $ref cycle) or one nested deeper than MAX_DEPTH is a 400 naming `param`. Pure.
 */
const MAX_DEPTH = 32;
const KEPT = [
  'format',
  'title',
  'description',
  'nullable',
  'enum',
  'maxItems',
  'minItems',
  'minProperties',
  'maxProperties',
  'minLength',
  'maxLength',
  'pattern',
  'example',
  'default',
  'minimum',
  'maximum',
  'propertyOrdering',
];
const TYPES: Record<string, string> = {
  string: 'STRING',
  number: 'NUMBER',
  integer: 'INTEGER',
  boolean: 'BOOLEAN',
  array: 'ARRAY',
  object: 'OBJECT',
  null: 'NULL',
};

type Json = Record<string, unknown>;
const isObject = (v: unknown): v is Json => typeof v === 'object' && v !== null && !Array.isArray(v);

export function toGeminiSchema(schema: JsonSchema, param: string): Json {
  const root = schema;
  const unsupported = (why: string) => unsupportedParameter(param, `cannot be sent to provider gemini: ${why}`);

  const resolve = (ref: string, seen: readonly string[]): Json => {
    const match = /^#\/(\$defs|definitions)\/([^/]+)$/.exec(ref);
    const target = match ? (root[match[1]!] as Json | undefined)?.[decodeURIComponent(match[2]!)] : undefined;
    if (!isObject(target)) throw unsupported(`$ref '${ref}' is not a local definition`);
    if (seen.includes(ref)) throw unsupported(`$ref '${ref}' is recursive`);
    return target;
  };

  const convert = (node: unknown, depth: number, seen: readonly string[]): Json => {
    if (depth > MAX_DEPTH) throw unsupported(`nested deeper than ${MAX_DEPTH} levels`);
    if (!isObject(node)) return {};
    if (typeof node.$ref === 'string') return convert(resolve(node.$ref, seen), depth + 1, [...seen, node.$ref]);
    const out: Json = {};
    const rawType = node.type;
    const types = (Array.isArray(rawType) ? rawType : rawType === undefined ? [] : [rawType]).filter(
      (t): t is string => typeof t === 'string',
    );
    const nonNull = types.filter((t) => t !== 'null');
    if (types.includes('null')) out.nullable = true;
    if (nonNull.length === 1) out.type = TYPES[nonNull[0]!] ?? nonNull[0]!.toUpperCase();
    else if (nonNull.length > 1) out.anyOf = nonNull.map((t) => convert({ ...node, type: t }, depth + 1, seen));
    for (const key of KEPT) if (node[key] !== undefined) out[key] = node[key];
    if (node.const !== undefined) out.enum = [node.const];
    if (isObject(node.properties)) {
      out.properties = Object.fromEntries(
        Object.entries(node.properties).map(([k, v]) => [k, convert(v, depth + 1, seen)]),
      );
    }
    if (Array.isArray(node.required)) out.required = node.required.filter((r) => typeof r === 'string');
    if (node.items !== undefined) out.items = convert(node.items, depth + 1, seen);
    const alternatives = Array.isArray(node.anyOf) ? node.anyOf : Array.isArray(node.oneOf) ? node.oneOf : undefined;
    if (alternatives !== undefined && out.anyOf === undefined)
      out.anyOf = alternatives.map((a) => convert(a, depth + 1, seen));
    return out;
  };

  return convert(schema, 0, []);
}
