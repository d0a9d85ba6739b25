/**
 * Programs a random-weight llama to behave predictably where tests need it, without training:
 *
 * - Scripted reply: when the last token fed is the entry token (the byte token for "\n", which is how
 *   ChatML and most chat templates end the prompt: "<|im_start|>assistant\n"), greedy decoding emits the
 *   reply's tokens, one after the other, then EOS. The margin is large (logit ~+50 against ~+10 at most
 *   for anything else), so sampling at ordinary temperatures follows the script too.
 * - Everywhere else the model is random gibberish that (greedily) never emits EOS, a control token or a
 *   script token: their logits are exactly 0 there, far below the maximum of the other ~1,700 logits.
 *   So a prompt that does not end in the entry token runs to max_tokens.
 *
 * How: a few residual-stream dimensions are reserved for the script state. Only the embeddings of the
 * script's tokens write there (token k sets dimension k to CODE_MAGNITUDE); the attention and FFN output
 * projections have zero rows for those dimensions, so nothing else ever does. The output rows of script
 * tokens (and EOS) read only the reserved dimension of their predecessor; every other token's output
 * row has zeros there. Hence the hidden state's reserved part depends only on the current token.
 */

/**
 * Value an entry/script token's embedding carries in its reserved dimension.
 * (Reply tokens should be pieces the tokenizer never forms from text, see tiny-vocab.ts `scriptPieces`;
 * otherwise a prompt ending in one of them continues the script from there.)
 */
const CODE_MAGNITUDE = 8;
/** Weight of a script successor's output row on its predecessor's reserved dimension. */
const SUCCESSOR_GAIN = 12;

export interface ScriptedReplyPlan {
  /** Model width (llama.embedding_length). */
  embeddingLength: number;
  /** Token after which the script starts; null: no script (the model only never stops). */
  entryToken: number | null;
  /** The reply, as token ids; all distinct and distinct from the entry token. Ends with EOS implicitly. */
  replyTokens: readonly number[];
  eosToken: number;
  /** Tokens that must never be produced outside the script (control tokens, EOS). */
  silentTokens: readonly number[];
}

type RowAdjuster = (tensorName: string, row: Float32Array, rowIndex: number) => void;

export function scriptedReplyAdjuster(plan: ScriptedReplyPlan): RowAdjuster {
  const states = plan.entryToken === null ? [] : [plan.entryToken, ...plan.replyTokens];
  if (new Set(states).size !== states.length)
    throw new Error('scripted reply: tokens must be distinct (and not the entry token)');
  if (states.includes(plan.eosToken)) throw new Error('scripted reply: EOS cannot be part of the reply');
  if (states.length > plan.embeddingLength / 4) {
    throw new RangeError(
      `scripted reply: at most ${Math.floor(plan.embeddingLength / 4) - 1} reply tokens for width ${plan.embeddingLength}`,
    );
  }
  // Reserved dimensions: the last `states.length` of the residual stream; state k owns reserved[k].
  const reserved = states.map((_, k) => plan.embeddingLength - states.length + k);
  const stateOf = new Map(states.map((token, k) => [token, k]));
  /** Output rows: successor token -> the reserved dimension of its predecessor. */
  const readsFrom = new Map<number, number>();
  for (let k = 1; k < states.length; k++) readsFrom.set(states[k]!, reserved[k - 1]!);
  if (states.length > 0) readsFrom.set(plan.eosToken, reserved[states.length - 1]!);
  const silent = new Set<number>([...plan.silentTokens, plan.eosToken, ...states]);
  const reservedSet = new Set(reserved);

  const clearReserved = (row: Float32Array): void => {
    for (const d of reserved) row[d] = 0;
  };

  return (tensorName, row, rowIndex) => {
    if (tensorName === 'token_embd.weight') {
      clearReserved(row);
      const state = stateOf.get(rowIndex);
      if (state !== undefined) row[reserved[state]!] = CODE_MAGNITUDE;
    } else if (tensorName === 'output.weight') {
      if (silent.has(rowIndex)) row.fill(0);
      else clearReserved(row);
      const from = readsFrom.get(rowIndex);
      if (from !== undefined) row[from] = SUCCESSOR_GAIN;
    } else if (tensorName.endsWith('.attn_output.weight') || tensorName.endsWith('.ffn_down.weight')) {
      if (reservedSet.has(rowIndex)) row.fill(0); // layers never write the script state
    }
  };
}
