import { describe, expect, it } from 'vitest';
import { checkTermination } from '../../../src/grammar/gbnf-termination.ts';

/** Rules from `name ::= body` lines. */
function rules(text: string): Map<string, string> {
  return new Map(
    text
      .trim()
      .split('\n')
      .map((line) => line.split(' ::= ') as [string, string]),
  );
}

describe('checkTermination', () => {
  it('accepts recursion that can end: through ?, *, {0,n} and an alternative', () => {
    for (const grammar of [
      'root ::= "[" root? "]"',
      'root ::= "[" (root ("," root)*)? "]"',
      'root ::= "(" root{0,3} ")"',
      'root ::= "x" | "{" root "}"',
      'root ::= item+\nitem ::= "a" | "(" root ")"',
      'char ::= [^"\\\\\\x7F\\x00-\\x1F] | [\\\\] (["\\\\/bfnrt] | "u" [0-9a-fA-F]{4})\nroot ::= "\\"" char* "\\""',
    ]) {
      expect(checkTermination(rules(grammar)), grammar).toEqual({ ok: true });
    }
  });

  it('refuses a rule every expansion of which contains itself, naming the rules at fault', () => {
    expect(checkTermination(rules('root ::= "{" a "}"\na ::= "x" root'))).toEqual({
      ok: false,
      problem: 'no-finite-value',
      rules: ['root', 'a'],
    });
    const plus = checkTermination(rules('root ::= "[" root+ "]"'));
    expect(plus).toMatchObject({ ok: false, problem: 'no-finite-value' });
    expect(checkTermination(rules('root ::= "(" root{1,3} ")"'))).toMatchObject({ ok: false });
    // A trap the model could walk into even though the root itself can end.
    expect(checkTermination(rules('root ::= "x" | "(" trap ")"\ntrap ::= "-" trap'))).toEqual({
      ok: false,
      problem: 'no-finite-value',
      rules: ['trap'],
    });
  });

  it('refuses left recursion, also behind terms that may match nothing', () => {
    expect(checkTermination(rules('root ::= root "x" | "y"'))).toEqual({
      ok: false,
      problem: 'left-recursion',
      rules: ['root'],
    });
    const hidden = checkTermination(rules('root ::= sp ("" a) | "y"\nsp ::= " "?\na ::= root "x"'));
    expect(hidden).toMatchObject({ ok: false, problem: 'left-recursion' });
    expect(new Set((hidden as { rules: readonly string[] }).rules)).toEqual(new Set(['root', 'a']));
    // A nullable term before the recursion, not a terminal: still left recursion.
    expect(checkTermination(rules('root ::= "z"* root "x" | "y"'))).toMatchObject({ problem: 'left-recursion' });
    // After a terminal it is not.
    expect(checkTermination(rules('root ::= "z" root "x" | "y"'))).toEqual({ ok: true });
  });
});
