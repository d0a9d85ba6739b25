import type { TokenPiece } from './utf8-state.ts';

/**
 * The grammar operations a closing walk needs, over some grammar state `S` (node-llama-cpp's
 * LlamaGrammarEvaluationState in the engine; a toy grammar in unit tests). `allows` and `clone` leave the state
 * as it is; `accept` advances it by a token that `allows` allowed.
 */
export interface GrammarOps<S> {
  clone(state: S): S;
  allows(state: S, token: number): boolean;
  accept(state: S, token: number): void;
}

/** A walk's result: its length in tokens (UNREACHABLE when none fits its cap) and its first token (-1: none). */
export interface ClosingWalk {
  length: number;
  first: number;
}

export const UNREACHABLE = Number.MAX_SAFE_INTEGER;

// The preferred strings, and the orders in which a walk step tries them (as native/src/grammar_closer.cpp).
const PREFERRED = ['"}', '"]', '"', ']}', '}}', '}', ']', '0', '""', '{}', '[]', 'null', 'true'] as const;
const at = (text: (typeof PREFERRED)[number]) => PREFERRED.indexOf(text);
/** Inside a string: close it (and what holds it) first; `}` or `]` there would only be more string. */
const IN_STRING = ['"}', '"]', '"'].map((t) => at(t as (typeof PREFERRED)[number]));
/** Elsewhere: close containers, then the shortest values, and open a string last. */
const STRUCTURAL = [']}', '}}', '}', ']', '0', '""', '{}', '[]', 'null', 'true', '"'].map((t) =>
  at(t as (typeof PREFERRED)[number]),
);

/**
 * How many tokens, at most, a grammar still needs before it is complete (allows end-of-generation): a greedy
 * walk over a small "closing alphabet" of single tokens on a clone of the grammar state. The TypeScript twin of
 * the native engine's GrammarCloser (native/src/grammar_closer.h), same alphabet and order, for the
 * node-llama-cpp engine, which reaches the grammar only through `GrammarOps`. A walk step takes
 * end-of-generation where allowed; else, inside a string (where the grammar allows a letter), the first allowed
 * of `"}` `"]` `"`; elsewhere the first allowed of `]}` `}}` `}` `]` `0` `""` `{}` `[]` `null` `true` `"`; else
 * the first allowed single printable ASCII character, then whitespace (e.g. the letters of a key a schema names).
 * Every walk is a real path, so the grammar can always complete in that many tokens.
 */
export class GrammarCloser<S> {
  private readonly preferred: number[];
  /** A letter token: allowed only inside a string. */
  private readonly probe: number;
  /** The single characters, in priority order. */
  private readonly characters: number[];

  /** `pieces`: each token's bytes ('end' for end-of-generation tokens); `eog`: the end token to try (-1: none). */
  constructor(
    pieces: readonly TokenPiece[],
    readonly eog: number,
    private readonly ops: GrammarOps<S>,
  ) {
    const decoder = new TextDecoder();
    this.preferred = PREFERRED.map(() => -1);
    const single = new Array<number>(128).fill(-1);
    for (let t = 0; t < pieces.length; t++) {
      const piece = pieces[t];
      if (!(piece instanceof Uint8Array) || piece.length === 0 || piece.length > 4) continue;
      const rank = PREFERRED.indexOf(decoder.decode(piece) as (typeof PREFERRED)[number]);
      if (rank >= 0 && this.preferred[rank] === -1) this.preferred[rank] = t;
      const c = piece[0]!;
      if (piece.length === 1 && c < 0x7f && single[c] === -1 && (c >= 0x20 || c === 0x0a || c === 0x09)) single[c] = t;
    }
    this.probe = [...'qxz'].map((c) => single[c.charCodeAt(0)]!).find((t) => t >= 0) ?? -1;
    this.characters = [];
    for (let c = 0x21; c < 0x7f; c++) if (single[c]! >= 0) this.characters.push(single[c]!);
    for (const c of [0x20, 0x0a, 0x09]) if (single[c]! >= 0) this.characters.push(single[c]!);
  }

  /** The walk from `state` (unchanged: the walk runs on a clone), or UNREACHABLE beyond `cap` tokens. */
  walk(state: S, cap: number): ClosingWalk {
    const s = this.ops.clone(state);
    let first = -1;
    for (let steps = 0; ; steps++) {
      if (this.eog >= 0 && this.ops.allows(s, this.eog)) return { length: steps, first };
      const inString = this.probe >= 0 && this.ops.allows(s, this.probe);
      let next = -1;
      for (const rank of inString ? IN_STRING : STRUCTURAL) {
        const t = this.preferred[rank]!;
        if (t >= 0 && this.ops.allows(s, t)) {
          next = t;
          break;
        }
      }
      if (next < 0) next = this.characters.find((t) => this.ops.allows(s, t)) ?? -1;
      if (next < 0 || steps >= cap) return { length: UNREACHABLE, first };
      if (steps === 0) first = next;
      this.ops.accept(s, next);
    }
  }
}
