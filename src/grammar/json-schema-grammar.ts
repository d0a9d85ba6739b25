import type { JsonSchema } from '../protocol/chat-request.ts';
import { GRAMMAR_LIMITS, GrammarBuilder, GrammarError, gbnfLiteral, gbnfRepetition } from './gbnf.ts';
import { checkTermination } from './gbnf-termination.ts';
import { integerRangeExpression } from './integer-range-grammar.ts';
import { equal, intersectSchemas } from './schema-intersection.ts';
import {
  ANNOTATIONS,
  isSchemaObject,
  own,
  repetitionBound,
  SUPPORTED_FORMATS,
  TYPES,
  UNSUPPORTED_KEYWORDS,
} from './schema-keywords.ts';

/**
 * JSON Schema -> GBNF (llama.cpp grammar) so that constrained sampling can only produce JSON that validates
 * against the schema. The approach of llama.cpp's json_schema_to_grammar, written for Hearth: one rule per
 * schema node, required properties first then optional ones in schema order, local `$ref`s as (possibly
 * recursive) rules. The grammar admits a subset of the valid documents (e.g. at most one space between
 * tokens; extra properties only where a schema declares no properties), never an invalid one.
 *
 * Supported: type (incl. lists), properties, required, additionalProperties, items, prefixItems,
 * minItems, maxItems, enum, const, anyOf, oneOf (as anyOf: branches should be disjoint), allOf and the
 * keywords beside an anyOf / oneOf / $ref (intersected: schema-intersection.ts), $ref to `#...` with $defs /
 * definitions, minLength, maxLength, minimum / maximum /
 * exclusiveMinimum / exclusiveMaximum on integers, format date, time, date-time, uuid. Annotations (title,
 * description, default, examples, ...) and keywords JSON Schema does not define are ignored. Anything else a
 * validator would check is refused with a GrammarError naming the keyword (a 400 at the edge).
 *
 * `strict` (OpenAI's strict mode): every object has all its properties, and no others.
 * Pure and synchronous; main thread. Results are cached by the caller (`GrammarCache`).
 */

const MAX_DEPTH = 64;
const MAX_REF_HOPS = 32;

export interface SchemaGrammarOptions {
  /** OpenAI strict mode: all properties required, no additional properties. Defaults to false. */
  strict?: boolean;
}

type Schema = JsonSchema | boolean;

/** The keywords that imply a type when `type` is absent, in the order they are tried (the first match wins). */
const IMPLIED_TYPES: ReadonlyArray<readonly [string, ReadonlyArray<keyof JsonSchema>]> = [
  ['object', ['properties', 'additionalProperties', 'required']],
  ['array', ['items', 'prefixItems', 'minItems', 'maxItems']],
  ['string', ['minLength', 'maxLength', 'format']],
  ['number', ['minimum', 'maximum', 'exclusiveMinimum', 'exclusiveMaximum']],
];

/**
 * Converts one root schema into rules of `builder`, rule names prefixed with `prefix`; returns the name of
 * the rule matching the whole document. Several roots may share one builder (the tool-call grammar).
 */
export class SchemaConverter {
  private readonly refRules = new Map<string, string>();

  constructor(
    private readonly builder: GrammarBuilder,
    private readonly root: Schema,
    private readonly prefix: string,
    private readonly strict: boolean,
  ) {}

  convert(): string {
    return this.visit(this.root, this.prefix, '#', 0);
  }

  /**
   * What is wrong when the builder's rules cannot finish (gbnf-termination.ts) because of this schema: a
   * GrammarError naming the `$ref` at fault, or null when none of the faulty rules is one of its references.
   */
  fault(problem: 'left-recursion' | 'no-finite-value', rules: readonly string[]): GrammarError | null {
    const faulty = new Set(rules);
    const ref = [...this.refRules].find(([, rule]) => faulty.has(rule))?.[0];
    if (ref === undefined) return null;
    const shown = JSON.stringify(ref.slice(0, 64));
    return problem === 'left-recursion'
      ? new GrammarError(
          `'$ref' ${shown} refers back to itself before any character of output (left recursion), which constrained output cannot enforce`,
          '$ref',
        )
      : new GrammarError(
          `The schema at ${shown} admits no finite JSON value (its '$ref's lead back to it with no way to end), so constrained output could never finish`,
        );
  }

  private visit(schema: Schema, name: string, path: string, depth: number): string {
    if (depth > MAX_DEPTH) throw new GrammarError(`The schema nests deeper than ${MAX_DEPTH} levels`);
    // A subschema may be visited more than once (type lists, anyOf siblings): bound the total work, not just the rules.
    this.builder.charge(isSchemaObject(schema) ? 1 + Object.keys(schema).length : 1);
    if (schema === true) return this.builder.primitive('value');
    if (schema === false) throw new GrammarError(`The schema at ${path} is 'false': no value can match it`);
    if (!isSchemaObject(schema)) throw new GrammarError(`The schema at ${path} must be an object or a boolean`);
    for (const k of UNSUPPORTED_KEYWORDS) {
      if (schema[k] !== undefined)
        throw new GrammarError(`JSON Schema keyword '${k}' (at ${path}) is not supported for constrained output`, k);
    }
    if (schema.uniqueItems === true)
      throw new GrammarError(
        `JSON Schema keyword 'uniqueItems' (at ${path}) is not supported for constrained output`,
        'uniqueItems',
      );
    const type = schema.type;
    const at = (suffix: string) => `${name}-${suffix}`;

    if (schema.$ref !== undefined) {
      // Keywords beside a $ref constrain too (2020-12): the target and they, intersected.
      // When they add nothing to the target (or are annotations), the reference stays a rule (it may be recursive).
      const constraints = Object.keys(schema).filter((k) => k !== '$ref' && !ANNOTATIONS.has(k));
      if (constraints.length === 0) return this.builder.alias(name, this.ref(schema.$ref, path, depth));
      const target = this.resolved({ $ref: schema.$ref }, '$ref', path);
      if (constraints.every((k) => Object.hasOwn(target, k) && equal(target[k], schema[k])))
        return this.builder.alias(name, this.ref(schema.$ref, path, depth));
      const { $ref: _, ...beside } = schema;
      return this.visit(this.intersect(target, beside, '$ref', path), name, path, depth + 1);
    }

    const union = schema.anyOf ?? schema.oneOf;
    if (union !== undefined) {
      const key = schema.anyOf !== undefined ? 'anyOf' : 'oneOf';
      if (!Array.isArray(union) || union.length === 0)
        throw new GrammarError(`'${key}' at ${path} must be a non-empty array`, key);
      // Sibling constraints apply to every branch.
      const siblings = Object.fromEntries(Object.entries(schema).filter(([k]) => k !== key && !ANNOTATIONS.has(k)));
      const alts = union.map((branch: unknown, i) => {
        const at_ = `${path}/${key}/${i}`;
        if (Object.keys(siblings).length === 0 || !isSchemaObject(branch))
          return this.visit(branch as Schema, at(String(i)), at_, depth + 1);
        // A $ref branch keeps its $ref (the siblings beside it), so that a reference they add nothing to stays a rule.
        const { $ref, ...own } = branch;
        const merged = this.intersect(siblings, own, key, at_);
        return this.visit($ref === undefined ? merged : { ...merged, $ref }, at(String(i)), at_, depth + 1);
      });
      return this.builder.union(name, alts);
    }
    if (schema.allOf !== undefined) {
      if (!Array.isArray(schema.allOf) || schema.allOf.length === 0)
        throw new GrammarError(`'allOf' at ${path} must be a non-empty array`, 'allOf');
      const { allOf, ...rest } = schema;
      let merged: JsonSchema = rest;
      allOf.forEach((member: unknown, i) => {
        const at_ = `${path}/allOf/${i}`;
        if (member === true) return;
        if (!isSchemaObject(member)) throw new GrammarError(`The schema at ${at_} must be an object or true`, 'allOf');
        merged = this.intersect(merged, this.resolved(member, 'allOf', at_), 'allOf', at_);
      });
      return this.visit(merged, name, `${path}/allOf`, depth + 1);
    }
    if (Array.isArray(type)) {
      if (type.length === 0) throw new GrammarError(`'type' at ${path} must not be empty`, 'type');
      const alts = type.map((t: unknown, i) => this.visit({ ...schema, type: t }, at(String(t ?? i)), path, depth + 1));
      return this.builder.union(name, alts);
    }
    if (type !== undefined && (typeof type !== 'string' || !TYPES.has(type)))
      throw new GrammarError(`'type' at ${path} must be one of ${[...TYPES].join(', ')}`, 'type');
    if (schema.const !== undefined) return this.builder.add(name, gbnfLiteral(JSON.stringify(schema.const)));
    if (schema.enum !== undefined) {
      if (!Array.isArray(schema.enum) || schema.enum.length === 0)
        throw new GrammarError(`'enum' at ${path} must be a non-empty array`, 'enum');
      return this.builder.add(
        name,
        `(${schema.enum.map((v) => gbnfLiteral(JSON.stringify(v))).join(' | ')})`,
        0,
        schema.enum.length,
      );
    }

    const inferred = type ?? this.inferType(schema);
    switch (inferred) {
      case 'object':
        return this.object(schema, name, path, depth);
      case 'array':
        return this.array(schema, name, path, depth);
      case 'string':
        return this.string(schema, name, path);
      case 'integer':
        return this.integer(schema, name, path);
      case 'number':
        for (const k of ['minimum', 'maximum', 'exclusiveMinimum', 'exclusiveMaximum']) {
          if (schema[k] !== undefined)
            throw new GrammarError(`JSON Schema keyword '${k}' (at ${path}) is supported on integers only`, k);
        }
        return this.builder.primitive('number');
      case 'boolean':
        return this.builder.primitive('boolean');
      case 'null':
        return this.builder.primitive('null');
      default:
        return this.builder.primitive('value');
    }
  }

  /** The type implied by type-specific keywords when `type` is absent; undefined = any value. */
  private inferType(schema: JsonSchema): string | undefined {
    return IMPLIED_TYPES.find(([, keywords]) => keywords.some((k) => schema[k] !== undefined))?.[0];
  }

  /** The schema a local `$ref` points to; GrammarError for any other reference. */
  private target(ref: unknown, path: string): unknown {
    if (typeof ref !== 'string' || !(ref === '#' || ref.startsWith('#/'))) {
      throw new GrammarError(
        `'$ref' ${JSON.stringify(ref)} at ${path} is not supported: only references inside the schema ('#/$defs/...')`,
        '$ref',
      );
    }
    let target: unknown = this.root;
    if (ref !== '#') {
      for (const raw of ref.slice(2).split('/')) {
        const key = raw.replace(/~1/g, '/').replace(/~0/g, '~');
        target = Array.isArray(target)
          ? /^(0|[1-9][0-9]*)$/.test(key)
            ? target[Number(key)]
            : undefined
          : isSchemaObject(target)
            ? own(target, key)
            : undefined;
        if (target === undefined)
          throw new GrammarError(`'$ref' ${JSON.stringify(ref)} at ${path} points to nothing`, '$ref');
      }
    }
    return target;
  }

  /**
   * `schema` with its top-level `$ref` (and its target's, and so on) replaced by the intersection with the
   * target, for intersecting it with other schemas; nested `$ref`s stay. `keyword`: what asked, for errors.
   */
  private resolved(schema: JsonSchema, keyword: string, path: string): JsonSchema {
    let out = schema;
    for (let hops = 0; out.$ref !== undefined; hops++) {
      if (hops >= MAX_REF_HOPS)
        throw new GrammarError(
          `'$ref' at ${path} leads through more than ${MAX_REF_HOPS} references without a schema`,
          '$ref',
        );
      const { $ref, ...rest } = out;
      const target = this.target($ref, path);
      this.builder.charge(1);
      if (target === true) out = rest;
      else if (!isSchemaObject(target))
        throw new GrammarError(
          `The schema '$ref' ${JSON.stringify($ref)} points to (at ${path}) must be an object or true`,
          '$ref',
        );
      else out = this.intersect(target, rest, keyword, path);
    }
    return out;
  }

  /** intersectSchemas, its work (the keys and properties it copies) charged to the builder. */
  private intersect(a: JsonSchema, b: JsonSchema, keyword: string, path: string): JsonSchema {
    const out = intersectSchemas(a, b, keyword, path);
    this.builder.charge(
      1 + Object.keys(out).length + (isSchemaObject(out.properties) ? Object.keys(out.properties).length : 0),
    );
    return out;
  }

  private ref(ref: unknown, path: string, depth: number): string {
    const known = typeof ref === 'string' ? this.refRules.get(ref) : undefined;
    if (known !== undefined) return known;
    const target = this.target(ref, path) as Schema;
    const key = ref as string;
    const ruleName = this.builder.reserve(`${this.prefix}-ref-${key.slice(1)}`);
    this.refRules.set(key, ruleName);
    const body = this.visit(target, `${ruleName}-def`, key, depth + 1);
    this.builder.define(ruleName, body);
    return ruleName;
  }

  private object(schema: JsonSchema, name: string, path: string, depth: number): string {
    const props = schema.properties ?? {};
    if (!isSchemaObject(props)) throw new GrammarError(`'properties' at ${path} must be an object`, 'properties');
    const requiredList = schema.required ?? [];
    if (!Array.isArray(requiredList) || requiredList.some((r) => typeof r !== 'string'))
      throw new GrammarError(`'required' at ${path} must be an array of strings`, 'required');
    const names = Object.keys(props);
    const required = new Set(this.strict ? names : (requiredList as string[]));
    // A required key 'properties' does not describe: refused where no such key may appear (strict mode, as OpenAI's;
    // additionalProperties false: no object satisfies the schema), else one more property, of additionalProperties.
    const undescribed = (requiredList as string[]).filter((r) => !Object.hasOwn(props, r));
    if (undescribed.length > 0 && (this.strict || schema.additionalProperties === false))
      throw new GrammarError(
        `'required' at ${path} names ${JSON.stringify(undescribed[0]!.slice(0, 64))}, which 'properties' does not describe` +
          (this.strict ? ' (strict: every required key must be a property)' : ', and additionalProperties is false'),
        'required',
      );
    for (const r of undescribed) names.push(r);
    const additional = isSchemaObject(schema.additionalProperties) ? (schema.additionalProperties as Schema) : true;
    const kv = new Map<string, string>();
    for (const p of names) {
      const valueRule = this.visit(
        (own(props, p) as Schema | undefined) ?? additional,
        `${name}-${p}`,
        `${path}/properties/${p}`,
        depth + 1,
      );
      kv.set(p, this.builder.add(`${name}-${p}-kv`, `${gbnfLiteral(JSON.stringify(p))} space ":" space ${valueRule}`));
    }
    this.builder.primitive('space');
    const req = names.filter((p) => required.has(p)).map((p) => kv.get(p)!);
    const opt = names.filter((p) => !required.has(p)).map((p) => kv.get(p)!);

    const extra = this.strict ? false : schema.additionalProperties;
    if (names.length === 0 && extra !== false && extra !== undefined) {
      // Free-form keys, only where no property is declared (so a key can never collide with one).
      const valueRule = isSchemaObject(extra)
        ? this.visit(extra, `${name}-additional`, `${path}/additionalProperties`, depth + 1)
        : this.builder.primitive('value');
      const keyRule = this.builder.primitive('string');
      const pair = this.builder.add(`${name}-additional-kv`, `${keyRule} ":" space ${valueRule}`);
      return this.builder.add(name, `"{" space ${gbnfRepetition(pair, 0, null, '"," space')} space "}"`);
    }
    if (names.length === 0 && extra === undefined && schema.properties === undefined)
      return this.builder.add(name, this.builder.primitive('object'));

    let body = `"{" space ${req.join(' "," space ')}`;
    if (opt.length > 0) {
      // Optional properties in order, each present or not: alternatives by the first one present.
      const tails: string[] = [];
      for (let i = opt.length - 1; i >= 0; i--) {
        const next = tails[0];
        tails.unshift(this.builder.add(`${name}-opt${i}-rest`, `( "," space ${opt[i]} )?${next ? ` ${next}` : ''}`));
      }
      const firstPresent = opt.map((rule, i) => (i + 1 < opt.length ? `${rule} ${tails[i + 1]}` : rule)).join(' | ');
      body += req.length > 0 ? ` ( "," space ( ${firstPresent} ) )?` : `( ${firstPresent} )?`;
    }
    return this.builder.add(name, `${body} space "}"`);
  }

  private array(schema: JsonSchema, name: string, path: string, depth: number): string {
    const minItems = repetitionBound(schema, 'minItems', path) ?? 0;
    const maxItems = repetitionBound(schema, 'maxItems', path) ?? null;
    if (maxItems !== null && maxItems < minItems)
      throw new GrammarError(`'maxItems' at ${path} is below 'minItems'`, 'maxItems');
    this.builder.primitive('space');
    const tuple = Array.isArray(schema.prefixItems)
      ? schema.prefixItems
      : Array.isArray(schema.items)
        ? schema.items
        : null;
    if (tuple !== null) {
      const rest = Array.isArray(schema.items) ? schema.additionalItems : schema.items;
      if (rest !== undefined && rest !== false)
        throw new GrammarError(`'items' after 'prefixItems' (at ${path}) is supported only as false`, 'items');
      if (tuple.length < minItems || (maxItems !== null && tuple.length > maxItems))
        throw new GrammarError(`'prefixItems' at ${path} conflicts with minItems/maxItems`, 'prefixItems');
      const parts = tuple.map((s: unknown, i) =>
        this.visit(s as Schema, `${name}-${i}`, `${path}/prefixItems/${i}`, depth + 1),
      );
      return this.builder.add(name, `"[" space ${parts.join(' "," space ')} space "]"`);
    }
    const item = this.visit((schema.items as Schema | undefined) ?? true, `${name}-item`, `${path}/items`, depth + 1);
    return this.builder.add(
      name,
      `"[" space ${gbnfRepetition(item, minItems, maxItems, '"," space')} space "]"`,
      maxItems ?? minItems,
    );
  }

  private string(schema: JsonSchema, name: string, path: string): string {
    const minLength = repetitionBound(schema, 'minLength', path);
    const maxLength = repetitionBound(schema, 'maxLength', path);
    if (schema.format !== undefined) {
      const rule = typeof schema.format === 'string' ? SUPPORTED_FORMATS.get(schema.format) : undefined;
      if (rule === undefined)
        throw new GrammarError(
          `String format ${JSON.stringify(schema.format)} (at ${path}) is not supported for constrained output; supported: ${[...SUPPORTED_FORMATS.keys()].join(', ')}`,
          'format',
        );
      if (minLength !== undefined || maxLength !== undefined)
        throw new GrammarError(
          `'minLength'/'maxLength' together with 'format' (at ${path}) are not supported`,
          maxLength !== undefined ? 'maxLength' : 'minLength',
        );
      return this.builder.add(name, this.builder.primitive(rule));
    }
    if (minLength === undefined && maxLength === undefined)
      return this.builder.add(name, this.builder.primitive('string'));
    if (maxLength !== undefined && maxLength < (minLength ?? 0))
      throw new GrammarError(`'maxLength' at ${path} is below 'minLength'`, 'maxLength');
    const char = this.builder.primitive('char');
    return this.builder.add(
      name,
      `"\\"" ${gbnfRepetition(char, minLength ?? 0, maxLength ?? null)} "\\""`,
      maxLength ?? minLength ?? 0,
    );
  }

  private integer(schema: JsonSchema, name: string, path: string): string {
    const num = (k: string): number | null => {
      const v = schema[k];
      if (v === undefined) return null;
      if (typeof v !== 'number' || !Number.isFinite(v)) throw new GrammarError(`'${k}' at ${path} must be a number`, k);
      return v;
    };
    let min = num('minimum');
    let max = num('maximum');
    const exMin = num('exclusiveMinimum');
    const exMax = num('exclusiveMaximum');
    if (exMin !== null) min = Math.max(min ?? -Infinity, Math.floor(exMin) + 1);
    if (exMax !== null) max = Math.min(max ?? Infinity, Math.ceil(exMax) - 1);
    if (min === null && max === null) return this.builder.add(name, this.builder.primitive('integer'));
    let range: string;
    try {
      range = integerRangeExpression(min, max);
    } catch {
      throw new GrammarError(`'minimum'/'maximum' at ${path} leave no integer`, 'minimum');
    }
    // Outside the try: the builder's own refusal (the grammar grew past its bounds) is not an empty range.
    return this.builder.add(name, `(${range})`);
  }
}

/** The grammar of one JSON document valid against `schema` (root rule `root`). Throws GrammarError. */
export function jsonSchemaToGrammar(schema: JsonSchema, options: SchemaGrammarOptions = {}): string {
  const builder = new GrammarBuilder();
  const converter = new SchemaConverter(builder, schema, 'root', options.strict === true);
  const rule = converter.convert();
  if (rule !== 'root') builder.add('root', rule);
  assertTerminates(builder, [converter], (err) => err);
  return builder.text();
}

/**
 * Throws when `builder`'s rules cannot finish (gbnf-termination.ts): the first of `converters` that owns a
 * faulty rule says why, its error passed through `wrap(error, index)`.
 */
export function assertTerminates(
  builder: GrammarBuilder,
  converters: readonly SchemaConverter[],
  wrap: (error: GrammarError, index: number) => GrammarError,
): void {
  const termination = checkTermination(builder.ruleSet());
  if (termination.ok) return;
  for (const [i, converter] of converters.entries()) {
    const error = converter.fault(termination.problem, termination.rules);
    if (error !== null) throw wrap(error, i);
  }
  throw new GrammarError('The schema admits no finite JSON value that constrained output could enforce');
}

/** `response_format: json_object`: any JSON object. */
export function jsonObjectGrammar(): string {
  const builder = new GrammarBuilder();
  builder.add('root', builder.primitive('object'));
  return builder.text();
}
