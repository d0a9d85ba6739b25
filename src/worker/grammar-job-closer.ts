import { type GrammarCloser, type GrammarOps, UNREACHABLE } from './grammar-closer.ts';

/** The longest closing walk tried (the native kClosingHorizon). */
const WALK_CAP = 64;

/**
 * Tokens before a job's budget ends from which its grammar is watched: the native kClosingHorizon (64), or
 * HEARTH_CLOSING_HORIZON where set, as for the native engine (0 turns closing off: bench/json-close-cost.ts's
 * A/B knob, not a setting).
 */
export const CLOSING_HORIZON = horizonFrom(process.env.HEARTH_CLOSING_HORIZON);

function horizonFrom(env: string | undefined): number {
  const n = env === undefined ? Number.NaN : Number.parseInt(env, 10);
  return Number.isInteger(n) && n >= 0 ? n : WALK_CAP;
}

/** What becomes of a sampled token: kept, replaced by another (already accepted by the grammar), or the end. */
export type Settled = { token: number } | 'end';

/**
 * Closing a grammar job in time on an engine that samples out of our hands (node-llama-cpp): the job's grammar
 * state lives here and is handed to the sampler before each token (`state()`); near the budget's end the state
 * before the sample is kept (`prepare`), and once the sampler has taken a token (`settle`) the job checks that the
 * grammar can still complete in the tokens left. If it cannot, the token is replaced by the first token of the
 * closer's walk from the state before it (the shortest completion known), or, where the grammar was already
 * complete, generation ends there. The native engine's policy (native/src/slot_sampler.cpp closeInTime), less its
 * try of the model's next likeliest tokens, which node-llama-cpp does not hand out before it samples.
 * When even the shortest completion does not fit, the tokens are the model's, cut by the budget, as without it.
 */
export class GrammarJobCloser<S> {
  private live: S;
  private before: S | undefined;

  constructor(
    private readonly closer: GrammarCloser<S>,
    private readonly ops: GrammarOps<S>,
    initial: S,
  ) {
    this.live = initial;
  }

  /** The grammar state the sampler must use (and accept its token into) for the next token. */
  state(): S {
    return this.live;
  }

  /** Before each sample: `remaining` tokens of the budget are left, the next one included. */
  prepare(remaining: number): void {
    this.before = remaining <= CLOSING_HORIZON ? this.ops.clone(this.live) : undefined;
  }

  /** After the sampler took `token` (the live state has accepted it), `remaining` counting it. */
  settle(token: number, remaining: number): Settled {
    const before = this.before;
    this.before = undefined;
    if (before === undefined) return { token };
    const after = remaining - 1;
    if (this.closer.walk(this.live, after).length <= after) return { token };
    const walk = this.closer.walk(before, WALK_CAP);
    if (walk.length === 0 && this.closer.eog >= 0) return 'end';
    if (walk.first < 0 || walk.length === UNREACHABLE) return { token };
    this.live = before;
    this.ops.accept(this.live, walk.first);
    return { token: walk.first };
  }
}
