/**
 * Whether a GBNF rule set can finish, checked before llama.cpp sees it. Recursive schemas ($ref) make
 * recursive rules, and two kinds cannot be enforced:
 *
 * - a rule that reaches itself before any character (`r ::= r | "null"`, from `{"anyOf":[{"$ref":"#"},...]}`):
 *   llama.cpp's grammar parser refuses left recursion, logging outside Hearth's log;
 * - a rule with no finite expansion (`r ::= "{" "\"a\":" r "}"`, from an object that requires another of its
 *   kind): llama.cpp accepts it, and constrained sampling then nests until max_tokens, an answer that is never
 *   valid JSON. An optional property of such a kind is a trap as well: once the model opens it, it cannot close.
 *
 * Parses the subset of GBNF the GrammarBuilder writes (literals, character classes, `.`, rule names, groups,
 * `|`, `? * + {m,n}`). Pure; linear in the grammar's size.
 */

/** One alternative: a sequence of terms. */
type Sequence = Term[];
type Term =
  | { kind: 'terminal' }
  | { kind: 'rule'; name: string }
  | { kind: 'group'; alternatives: Sequence[] }
  | { kind: 'repeat'; term: Term; min: number };

export type Termination =
  { ok: true } | { ok: false; problem: 'left-recursion' | 'no-finite-value'; rules: readonly string[] };

/** Checks every rule of `rules` (name -> body). `rules` on failure: the rules at fault. */
export function checkTermination(rules: ReadonlyMap<string, string>): Termination {
  const parsed = new Map<string, Sequence[]>();
  for (const [name, body] of rules) parsed.set(name, new BodyParser(body).parse());

  // Fixed points: a rule is nullable (matches "") / productive (matches some finite text) when one of its
  // alternatives is, given what is known of the rules it names.
  const nullable = new Set<string>();
  const productive = new Set<string>();
  for (const [set, terminals] of [
    [nullable, false],
    [productive, true],
  ] as const) {
    for (let changed = true; changed;) {
      changed = false;
      for (const [name, alternatives] of parsed) {
        if (!set.has(name) && alternatives.some((seq) => seq.every((t) => termHolds(t, set, terminals)))) {
          set.add(name);
          changed = true;
        }
      }
    }
  }

  const barren = [...parsed.keys()].filter((name) => !productive.has(name));
  if (barren.length > 0) return { ok: false, problem: 'no-finite-value', rules: barren };

  // Left recursion: a cycle in "names at a leftmost position" (after terms that may match "").
  const leftmost = new Map<string, Set<string>>();
  for (const [name, alternatives] of parsed) {
    const out = new Set<string>();
    for (const seq of alternatives) sequenceLeftmost(seq, nullable, out);
    leftmost.set(name, out);
  }
  const cycle = findCycle(leftmost);
  return cycle === null ? { ok: true } : { ok: false, problem: 'left-recursion', rules: cycle };
}

/**
 * Whether `t` can match given the rules in `known`: the empty text (`terminals` false: nullable) or some finite
 * text (`terminals` true: productive). The two differ only in what a terminal can do.
 */
function termHolds(t: Term, known: ReadonlySet<string>, terminals: boolean): boolean {
  switch (t.kind) {
    case 'terminal':
      return terminals;
    case 'rule':
      return known.has(t.name);
    case 'group':
      return t.alternatives.some((seq) => seq.every((x) => termHolds(x, known, terminals)));
    case 'repeat':
      return t.min === 0 || termHolds(t.term, known, terminals);
  }
}

/** Adds to `out` the rules `seq` can start with; returns whether all of `seq` may match "". */
function sequenceLeftmost(seq: Sequence, nullable: ReadonlySet<string>, out: Set<string>): boolean {
  for (const t of seq) {
    if (!termLeftmost(t, nullable, out)) return false;
  }
  return true;
}

function termLeftmost(t: Term, nullable: ReadonlySet<string>, out: Set<string>): boolean {
  switch (t.kind) {
    case 'terminal':
      return false;
    case 'rule':
      out.add(t.name);
      return nullable.has(t.name);
    case 'group': {
      let any = false;
      for (const seq of t.alternatives) any = sequenceLeftmost(seq, nullable, out) || any;
      return any;
    }
    case 'repeat':
      return termLeftmost(t.term, nullable, out) || t.min === 0;
  }
}

/** A cycle in `edges` (its rules, in order), or null. Iterative depth-first search. */
function findCycle(edges: ReadonlyMap<string, ReadonlySet<string>>): string[] | null {
  const state = new Map<string, 'open' | 'done'>();
  for (const start of edges.keys()) {
    if (state.has(start)) continue;
    const path: string[] = [start];
    const iterators: Array<Iterator<string>> = [(edges.get(start) ?? new Set<string>()).values()];
    state.set(start, 'open');
    while (path.length > 0) {
      const next = iterators.at(-1)!.next();
      if (next.done) {
        state.set(path.pop()!, 'done');
        iterators.pop();
        continue;
      }
      const to = next.value;
      if (state.get(to) === 'open') return path.slice(path.indexOf(to));
      if (state.has(to) || !edges.has(to)) continue;
      state.set(to, 'open');
      path.push(to);
      iterators.push(edges.get(to)!.values());
    }
  }
  return null;
}

/** A recursive-descent parser of one rule body (the GrammarBuilder's output; anything else throws). */
class BodyParser {
  private at = 0;

  constructor(private readonly text: string) {}

  parse(): Sequence[] {
    const alternatives = this.alternatives();
    this.space();
    if (this.at < this.text.length) this.fail('unexpected text');
    return alternatives;
  }

  private alternatives(): Sequence[] {
    const out: Sequence[] = [this.sequence()];
    while (this.peek() === '|') {
      this.at++;
      out.push(this.sequence());
    }
    return out;
  }

  private sequence(): Sequence {
    const out: Sequence = [];
    for (;;) {
      const c = this.peek();
      if (c === undefined || c === '|' || c === ')') return out;
      out.push(this.postfix(this.primary()));
    }
  }

  private primary(): Term {
    const c = this.text[this.at]!;
    if (c === '"') return this.literal();
    if (c === '.') {
      this.at++;
      return { kind: 'terminal' };
    }
    if (c === '[') {
      this.skipDelimited(']');
      return { kind: 'terminal' };
    }
    if (c === '(') {
      this.at++;
      const alternatives = this.alternatives();
      if (this.peek() !== ')') this.fail("expected ')'");
      this.at++;
      return { kind: 'group', alternatives };
    }
    const name = /^[a-zA-Z0-9-]+/.exec(this.text.slice(this.at))?.[0];
    if (name === undefined) this.fail('expected a term');
    this.at += name.length;
    return { kind: 'rule', name };
  }

  /** A literal; "" matches the empty text, so it is a group with one empty alternative. */
  private literal(): Term {
    const start = this.at;
    this.skipDelimited('"');
    return this.at - start === 2 ? { kind: 'group', alternatives: [[]] } : { kind: 'terminal' };
  }

  private postfix(term: Term): Term {
    const c = this.text[this.at];
    if (c === '?' || c === '*') {
      this.at++;
      return { kind: 'repeat', term, min: 0 };
    }
    if (c === '+') {
      this.at++;
      return { kind: 'repeat', term, min: 1 };
    }
    if (c === '{') {
      const m = /^\{(\d+)(,\d*)?\}/.exec(this.text.slice(this.at));
      if (m === null) this.fail('bad repetition');
      this.at += m[0].length;
      return { kind: 'repeat', term, min: Number(m[1]) };
    }
    return term;
  }

  /** Skips from the opening character through `close`, honouring backslash escapes. */
  private skipDelimited(close: string): void {
    for (this.at++; this.at < this.text.length; this.at++) {
      const c = this.text[this.at];
      if (c === '\\') this.at++;
      else if (c === close) {
        this.at++;
        return;
      }
    }
    this.fail(`unterminated ${close}`);
  }

  /** The next non-space character (the position moves past the spaces), or undefined at the end. */
  private peek(): string | undefined {
    this.space();
    return this.text[this.at];
  }

  private space(): void {
    while (this.text[this.at] === ' ' || this.text[this.at] === '\n') this.at++;
  }

  private fail(what: string): never {
    throw new Error(`gbnf-termination: ${what} at ${this.at} of ${JSON.stringify(this.text.slice(0, 200))}`);
  }
}
