/**
 * The tiny llama used by tests where no real model is available: 2 layers of width 64, a ~1,700-token
 * SentencePiece vocabulary (see tiny-vocab.ts), random weights, about 0.5 MB, written in milliseconds.
 *
 * Behaviour (see scripted-reply.ts), deterministic at temperature 0:
 * - after a prompt ending in "\n" (as every ChatML prompt does: "<|im_start|>assistant\n") it replies
 *   `reply` and then EOS -> finish_reason "stop". The default reply, "Hello! I am a tiny test model.", is
 *   3 tokens: "Hello! I" | " am a tiny" | " test model." (pieces the tokenizer never produces from text,
 *   so a prompt containing the reply text does not trigger it);
 * - after any other prompt (or with `reply: null`) it emits gibberish and never EOS -> runs to max_tokens.
 * The script's margin is large enough that sampling at ordinary temperatures follows it too.
 *
 * Weight types exercise all three the writer supports: Q8_0 embedding, F16 matrices, F32 norms.
 */
import { writeGgufFile, type GgmlTensorType, type GgufFileSpec } from './gguf-writer.ts';
import { llamaGgufSpec, llamaShapeOf } from './llama-gguf.ts';
import { scriptedReplyAdjuster } from './scripted-reply.ts';
import { buildTinyVocabulary, scriptPieces, TINY_EOS_ID, tinyTokenizerMetadata, TOKEN_TYPE } from './tiny-vocab.ts';

/** What the tiny model says after a prompt ending in "\n" (e.g. any ChatML prompt). */
export const DEFAULT_TINY_REPLY = 'Hello! I am a tiny test model.';

export interface TinyLlamaOptions {
  /** Defaults to 2. */
  blockCount?: number;
  /** Defaults to 64. */
  embeddingLength?: number;
  /** Defaults to 4. */
  headCount?: number;
  /** Defaults to 2. */
  headCountKv?: number;
  /** Defaults to 128. */
  feedForwardLength?: number;
  /** Training context length (llama.context_length). Defaults to 2048. */
  contextLength?: number;
  /** Weight seed. Defaults to 1. */
  seed?: number;
  /** A Jinja template stored as tokenizer.chat_template (e.g. CHATML_TEMPLATE). Defaults to null: none. */
  chatTemplate?: string | null;
  /** Defaults to 'Q8_0'. */
  embeddingType?: GgmlTensorType;
  /** Layer matrices and the output head. Defaults to 'F16'. */
  matrixType?: GgmlTensorType;
  /** Logit std for a unit hidden state. Defaults to 3. */
  logitScale?: number;
  /**
   * Text the model replies after a prompt ending in "\n", then EOS; null: no script (never stops).
   * Its tokens must be distinct (no repeated word). Defaults to DEFAULT_TINY_REPLY.
   */
  reply?: string | null;
}

export const DEFAULT_TINY_LLAMA = {
  blockCount: 2,
  embeddingLength: 64,
  headCount: 4,
  headCountKv: 2,
  feedForwardLength: 128,
  contextLength: 2048,
  seed: 1,
  chatTemplate: null,
  embeddingType: 'Q8_0',
  matrixType: 'F16',
  logitScale: 3,
  reply: DEFAULT_TINY_REPLY,
} as const satisfies Required<TinyLlamaOptions>;

export function resolveTinyLlamaOptions(options: TinyLlamaOptions = {}): Required<TinyLlamaOptions> {
  const resolved: Required<TinyLlamaOptions> = { ...DEFAULT_TINY_LLAMA };
  for (const [key, value] of Object.entries(options)) {
    if (value !== undefined) (resolved as Record<string, unknown>)[key] = value;
  }
  return resolved;
}

export function tinyLlamaSpec(options: TinyLlamaOptions = {}): GgufFileSpec {
  const o = resolveTinyLlamaOptions(options);
  const replyPieces = o.reply === null ? [] : scriptPieces(buildTinyVocabulary(), o.reply);
  const vocab = buildTinyVocabulary(replyPieces);
  const adjustRow = scriptedReplyAdjuster({
    embeddingLength: o.embeddingLength,
    entryToken: o.reply === null ? null : vocab.tokens.indexOf('<0x0A>'),
    replyTokens: replyPieces.map((piece) => vocab.tokens.indexOf(piece)),
    eosToken: TINY_EOS_ID,
    silentTokens: [...vocab.tokenTypes.keys()].filter(
      (id) => vocab.tokenTypes[id] === TOKEN_TYPE.control || vocab.tokenTypes[id] === TOKEN_TYPE.unknown,
    ),
  });
  return llamaGgufSpec({
    name: o.chatTemplate === null ? 'hearth-tiny-llama' : 'hearth-tiny-llama-chat',
    shape: llamaShapeOf(o),
    tokenizer: tinyTokenizerMetadata(vocab, o.chatTemplate),
    embeddingType: o.embeddingType,
    matrixType: o.matrixType,
    outputType: o.matrixType,
    seed: o.seed,
    logitScale: o.logitScale,
    adjustRow,
  });
}

/** Writes the tiny llama at `path` (not atomically; see test-model-path.ts). Returns the size in bytes. */
export function writeTinyLlama(path: string, options: TinyLlamaOptions = {}): Promise<number> {
  return writeGgufFile(path, tinyLlamaSpec(options));
}
