import type { LlamaGrammarEvaluationState, LlamaModel } from 'node-llama-cpp';
import type { GrammarOps } from './grammar-closer.ts';

/** node-llama-cpp 3.22's grammar calls (its LlamaSampler's static helpers), not part of its public types. */
interface GrammarBindings {
  canBeNextTokenForGrammarEvaluationState(state: unknown, token: number): boolean;
  acceptGrammarEvaluationStateToken(state: unknown, token: number): void;
}

/**
 * GrammarOps over node-llama-cpp grammar evaluation states. node-llama-cpp exposes `clone()` publicly but reaches
 * "is this token allowed" and "accept this token" only through its addon's AddonSampler statics (the same calls its
 * own LlamaChat and draft-token predictor make): those are read once here and checked, so that a node-llama-cpp
 * without them fails at the first grammar job with a clear message instead of mid-generation. The package is
 * pinned (package.json), and test/e2e/json-close.test.ts runs this path.
 */
export function llamaGrammarOps(model: LlamaModel): GrammarOps<LlamaGrammarEvaluationState> {
  const internals = model.llama as unknown as { _bindings?: { AddonSampler?: Partial<GrammarBindings> } };
  const sampler = internals._bindings?.AddonSampler;
  if (
    typeof sampler?.canBeNextTokenForGrammarEvaluationState !== 'function' ||
    typeof sampler.acceptGrammarEvaluationStateToken !== 'function'
  ) {
    throw new Error(
      'this node-llama-cpp has no grammar token calls (AddonSampler.canBeNextTokenForGrammarEvaluationState); Hearth pins node-llama-cpp 3.22.1',
    );
  }
  const calls = sampler as GrammarBindings;
  const native = (state: LlamaGrammarEvaluationState) => (state as unknown as { _state: unknown })._state;
  return {
    clone: (state) => state.clone(),
    allows: (state, token) => calls.canBeNextTokenForGrammarEvaluationState(native(state), token),
    accept: (state, token) => calls.acceptGrammarEvaluationStateToken(native(state), token),
  };
}
