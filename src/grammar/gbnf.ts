/**
 * Building blocks of GBNF, llama.cpp's grammar syntax (grammars/README.md in llama.cpp): a rule set with
 * collision-free names, literal escaping, bounded repetition, and the JSON primitives every JSON grammar
 * shares. Pure; main thread. The grammar text is compiled by the engine (root rule `root`).
 */

/** A grammar the converter refuses to build is a 400 from the caller; this carries what to say. */
export class GrammarError extends Error {
  constructor(
    message: string,
    readonly keyword: string | null = null,
  ) {
    super(message);
  }
}

/**
 * 4000 rules and 256 KiB of grammar text; 4 Mi units of conversion work (a schema node visited, a rule body
 * written, deduplicated or not: a schema can make the converter visit one subschema many times under the
 * same rule names, which the first two never see): a schema above any is refused as too complex.
 * `maxRepetition`: the largest minItems / maxItems / minLength / maxLength, as llama.cpp's grammar parser
 * expands `x{m,n}` into n rules, refuses more than 2000 (an array item with its separator is two), and turns
 * a larger maximum into no maximum at all. `maxExpandedRules`: the sum of those bounds over the grammar's
 * rules, what llama.cpp parses them into: the engine parses a grammar on its slot loop thread (every slot
 * waits) and keeps it parsed; 1000 strings of maxLength 1000 (a million rules) took 1.4 s and about 140 MB.
 * `maxAlternatives`: the paths llama.cpp walks into one rule when a stack reaches it (its alternatives, through
 * the rules they name: anyOf of refs to anyOf of refs multiplies them with rules and text growing linearly);
 * 2^18 paths took 66 ms on the slot loop thread, each time.
 */
export const GRAMMAR_LIMITS = {
  maxRules: 4000,
  maxChars: 256 * 1024,
  maxWork: 4 * 1024 * 1024,
  maxRepetition: 1000,
  maxExpandedRules: 32 * 1024,
  maxAlternatives: 10_000,
} as const;

/**
 * Whitespace between JSON tokens: at most one space. Stricter than JSON allows, so that a model cannot
 * spend its tokens on indentation; every string it admits is still valid JSON.
 */
const SPACE = '" "?';

/** JSON primitives (name -> [body, rules it uses]). */
const PRIMITIVES: Record<string, [string, string[]]> = {
  space: [SPACE, []],
  boolean: ['("true" | "false")', []],
  null: ['"null"', []],
  'integral-part': ['[0] | [1-9] [0-9]{0,15}', []],
  'decimal-part': ['[0-9]{1,16}', []],
  integer: ['"-"? integral-part', ['integral-part']],
  number: ['"-"? integral-part ("." decimal-part)? ([eE] [-+]? integral-part)?', ['integral-part', 'decimal-part']],
  char: ['[^"\\\\\\x7F\\x00-\\x1F] | [\\\\] (["\\\\/bfnrt] | "u" [0-9a-fA-F]{4})', []],
  string: ['"\\"" char* "\\""', ['char']],
  value: [
    'object | array | string | number | boolean | null',
    ['object', 'array', 'string', 'number', 'boolean', 'null'],
  ],
  object: [
    '"{" space ( string ":" space value ("," space string ":" space value)* )? space "}"',
    ['string', 'value', 'space'],
  ],
  array: ['"[" space ( value ("," space value)* )? space "]"', ['value', 'space']],
  // String formats (the JSON string, quotes included). Dates are exact per month; February stops at 28.
  date: [
    '[0-9]{4} "-" ( ("0" [13578] | "1" [02]) "-" ("0" [1-9] | [12] [0-9] | "3" [01]) | ("0" [469] | "11") "-" ("0" [1-9] | [12] [0-9] | "30") | "02" "-" ("0" [1-9] | "1" [0-9] | "2" [0-8]) )',
    [],
  ],
  time: [
    '([01] [0-9] | "2" [0-3]) ":" [0-5] [0-9] ":" [0-5] [0-9] ("." [0-9]{1,3})? ("Z" | [+-] ([01] [0-9] | "2" [0-3]) ":" [0-5] [0-9])',
    [],
  ],
  'date-string': ['"\\"" date "\\""', ['date']],
  'time-string': ['"\\"" time "\\""', ['time']],
  'date-time-string': ['"\\"" date "T" time "\\""', ['date', 'time']],
  'uuid-string': [
    '"\\"" [0-9a-fA-F]{8} "-" [0-9a-fA-F]{4} "-" [0-9a-fA-F]{4} "-" [0-9a-fA-F]{4} "-" [0-9a-fA-F]{12} "\\""',
    [],
  ],
};

/** A GBNF string literal for `text` (quotes included). */
export function gbnfLiteral(text: string): string {
  let out = '"';
  for (const ch of text) {
    const code = ch.codePointAt(0)!;
    if (ch === '"') out += '\\"';
    else if (ch === '\\') out += '\\\\';
    else if (ch === '\n') out += '\\n';
    else if (ch === '\r') out += '\\r';
    else if (ch === '\t') out += '\\t';
    else if (code < 0x20 || code === 0x7f) out += `\\x${code.toString(16).padStart(2, '0')}`;
    else out += ch;
  }
  return `${out}"`;
}

/**
 * `item` repeated min..max times (max null = unbounded), with `separator` between items when given.
 * Returns '' for exactly zero items.
 */
export function gbnfRepetition(item: string, min: number, max: number | null, separator?: string): string {
  if (max === 0) return '';
  if (separator === undefined) {
    if (min === 0 && max === 1) return `${item}?`;
    if (min === 0 && max === null) return `${item}*`;
    if (min === 1 && max === null) return `${item}+`;
    return `${item}{${min},${max ?? ''}}`;
  }
  const rest = gbnfRepetition(`(${separator} ${item})`, Math.max(min - 1, 0), max === null ? null : max - 1);
  const seq = rest === '' ? item : `${item} ${rest}`;
  return min === 0 ? `(${seq})?` : seq;
}

/** A set of named rules; names are made unique per body, so one builder can hold many schemas. */
export class GrammarBuilder {
  private readonly rules = new Map<string, string>();
  private chars = 0;
  private work = 0;
  private expandedRules = 0;
  /** Rule -> its paths (see maxAlternatives) where above 1. */
  private readonly widths = new Map<string, number>();

  /** The paths llama.cpp walks into `rule` (a rule name) when a stack reaches it. */
  width(rule: string): number {
    return this.widths.get(rule) ?? 1;
  }

  /** Counts `units` of conversion work; throws GrammarError past GRAMMAR_LIMITS.maxWork. */
  charge(units: number): void {
    this.work += units;
    if (this.work > GRAMMAR_LIMITS.maxWork) throw new GrammarError('The schema is too complex to turn into a grammar');
  }

  /**
   * Adds `name ::= body`; returns the name used (suffixed when `name` already holds another body).
   * `repetitions`: the rules llama.cpp expands the body's `{m,n}` into (n, or m when unbounded), counted once per rule.
   * `width`: the paths into the body (see maxAlternatives): the sum of its alternatives' for `a | b | ...`.
   */
  add(name: string, body: string, repetitions = 0, width = 1): string {
    this.charge(name.length + body.length);
    if (width > GRAMMAR_LIMITS.maxAlternatives) {
      throw new GrammarError(
        `The schema's alternatives (anyOf / oneOf / enum / type lists, through $ref) multiply to more than ${GRAMMAR_LIMITS.maxAlternatives}`,
      );
    }
    const base = name.replace(/[^a-zA-Z0-9-]+/g, '-') || 'r';
    let key = base;
    for (let i = 0; this.rules.has(key) && this.rules.get(key) !== body; i++) key = `${base}${i}`;
    if (!this.rules.has(key)) {
      this.chars += key.length + body.length + 6;
      this.expandedRules += repetitions;
      if (this.rules.size >= GRAMMAR_LIMITS.maxRules || this.chars > GRAMMAR_LIMITS.maxChars) {
        throw new GrammarError('The schema is too complex to turn into a grammar');
      }
      if (this.expandedRules > GRAMMAR_LIMITS.maxExpandedRules) {
        throw new GrammarError(
          `The schema's minItems / maxItems / minLength / maxLength add up to more than ${GRAMMAR_LIMITS.maxExpandedRules} repetitions`,
        );
      }
    }
    this.rules.set(key, body);
    if (width > 1) this.widths.set(key, width);
    return key;
  }

  /** `name ::= a | b | ...` over rule names; its width is the sum of theirs. */
  union(name: string, alternatives: readonly string[]): string {
    return this.add(
      name,
      alternatives.join(' | '),
      0,
      alternatives.reduce((sum, a) => sum + this.width(a), 0),
    );
  }

  /** `name ::= rule`, as wide as `rule`. */
  alias(name: string, rule: string): string {
    return this.add(name, rule, 0, this.width(rule));
  }

  /** Reserves a name now (for recursive references) and returns it; define it later with `define`. */
  reserve(name: string): string {
    return this.add(name, `<pending ${name}>`);
  }

  /** Defines a reserved rule as `body`, a rule name (as wide as it). */
  define(key: string, body: string): void {
    this.rules.set(key, body);
    if (this.width(body) > 1) this.widths.set(key, this.width(body));
  }

  has(name: string): boolean {
    return this.rules.has(name);
  }

  /** The rules so far (name -> body), for analysis (gbnf-termination.ts). */
  ruleSet(): ReadonlyMap<string, string> {
    return this.rules;
  }

  /** A JSON primitive (and the primitives it uses) under its own name. */
  primitive(name: keyof typeof PRIMITIVES | string): string {
    const p = PRIMITIVES[name];
    if (p === undefined) throw new Error(`unknown primitive ${name}`);
    if (!this.rules.has(name)) {
      this.rules.set(name, p[0]);
      for (const dep of p[1]) this.primitive(dep);
    }
    return name;
  }

  /** The grammar text; `root` must have been added. */
  text(): string {
    if (!this.rules.has('root')) throw new Error('grammar has no root rule');
    return [...this.rules].map(([k, v]) => `${k} ::= ${v}`).join('\n') + '\n';
  }
}
