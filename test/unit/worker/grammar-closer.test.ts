import { describe, expect, it } from 'vitest';
import { GrammarCloser, type GrammarOps, UNREACHABLE } from '../../../src/worker/grammar-closer.ts';
import { CLOSING_HORIZON, GrammarJobCloser } from '../../../src/worker/grammar-job-closer.ts';
import type { TokenPiece } from '../../../src/worker/utf8-state.ts';

/**
 * The closing walk and the per-job policy on a toy grammar (the real one, node-llama-cpp's, runs in
 * test/e2e/grammar-and-tools/json-close.test.ts): the language `{"k":"<letters>"}`, optionally followed by ` {}`, read character by
 * character, so the shortest completion from any state is known. Its state is the text so far; a token is allowed
 * when the text stays a prefix of some sentence of the language.
 */
const SENTENCE = /^\{"k":"[a-z]*"\}( \{\})?$/;
function isPrefix(text: string): boolean {
  const head = '{"k":"';
  if (text.length <= head.length) return head.startsWith(text);
  return text.startsWith(head) && /^[a-z]*("(\}( (\{(\})?)?)?)?)?$/.test(text.slice(head.length));
}

const PIECES = ['<eos>', '{', '}', '"', 'k', ':', 'q', 'x', '"}', '{}', 'hello', ' '];
const EOS = 0;
const id = (piece: string) => PIECES.indexOf(piece);
const pieces: TokenPiece[] = PIECES.map((p, t) => (t === EOS ? 'end' : new TextEncoder().encode(p)));

interface State {
  text: string;
  accepted: number;
}
const ops: GrammarOps<State> = {
  clone: (s) => ({ ...s }),
  allows: (s, token) => (token === EOS ? SENTENCE.test(s.text) : isPrefix(s.text + PIECES[token]!)),
  accept: (s, token) => {
    if (!ops.allows(s, token)) throw new Error(`token ${PIECES[token]} not allowed after ${s.text}`);
    s.text += PIECES[token]!;
    s.accepted++;
  },
};
const state = (text: string): State => ({ text, accepted: 0 });
const closer = () => new GrammarCloser(pieces, EOS, ops);

describe('GrammarCloser', () => {
  it('walks the shortest completion and leaves the state as it was', () => {
    const s = state('');
    // `{` `"` `k` `"` `:` `"` `"}`: the key's letters come from the single-character fallback, `"}` is one token.
    expect(closer().walk(s, 64)).toEqual({ length: 7, first: id('{') });
    expect(s).toEqual(state(''));
  });

  it('closes a string with the `"}` token and is done when the grammar allows the end', () => {
    expect(closer().walk(state('{"k":"xq'), 64)).toEqual({ length: 1, first: id('"}') });
    expect(closer().walk(state('{"k":"x"}'), 64)).toEqual({ length: 0, first: -1 });
  });

  it('is unreachable beyond its cap', () => {
    expect(closer().walk(state(''), 6).length).toBe(UNREACHABLE);
    expect(closer().walk(state(''), 7).length).toBe(7);
  });
});

describe('GrammarJobCloser', () => {
  /** Drives one job: the "model" always proposes `x` (more string); returns the text and how it ended. */
  function run(budget: number): { text: string; end: 'end' | 'budget' } {
    const live = state('{"k":"');
    const job = new GrammarJobCloser(closer(), ops, live);
    let produced = 0;
    while (produced < budget) {
      job.prepare(budget - produced);
      const s = job.state();
      const proposed = id('x');
      ops.accept(s, proposed); // the sampler takes the model's token into the live state
      const settled = job.settle(proposed, budget - produced);
      if (settled === 'end') return { text: job.state().text, end: 'end' };
      produced++;
    }
    return { text: job.state().text, end: 'budget' };
  }

  it('lets the model write until only the closing fits, then closes in time', () => {
    for (const budget of [1, 2, 5, CLOSING_HORIZON + 10]) {
      const { text, end } = run(budget);
      expect(SENTENCE.test(text), `${budget}: ${text}`).toBe(true);
      expect(end).toBe('budget');
      expect(text).toBe(`{"k":"${'x'.repeat(budget - 1)}"}`);
    }
  });

  it('ends the job where the grammar was complete and the sampled token leaves no room', () => {
    const live = state('{"k":"x"}');
    const job = new GrammarJobCloser(closer(), ops, live);
    job.prepare(1);
    ops.accept(job.state(), id(' ')); // allowed (` {}` may follow), but then `{}` is still needed
    expect(job.settle(id(' '), 1)).toBe('end');
  });

  it('keeps a token after which the grammar still completes in time', () => {
    const job = new GrammarJobCloser(closer(), ops, state('{"k":"x"}'));
    job.prepare(2);
    ops.accept(job.state(), id(' '));
    expect(job.settle(id(' '), 2)).toEqual({ token: id(' ') });
  });

  it('changes nothing outside the last CLOSING_HORIZON tokens', () => {
    const live = state('{"k":"');
    const job = new GrammarJobCloser(closer(), ops, live);
    job.prepare(CLOSING_HORIZON + 1);
    ops.accept(job.state(), id('x'));
    expect(job.settle(id('x'), CLOSING_HORIZON + 1)).toEqual({ token: id('x') });
  });
});
