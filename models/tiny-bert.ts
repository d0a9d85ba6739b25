/**
 * A tiny BERT-family embedding model for tests (no download): llama.cpp's `bert` architecture (an encoder, no
 * output head: it serves embeddings only), 2 layers of width 32, a ~200-piece WordPiece vocabulary
 * (`tokenizer.ggml.model = "bert"`), random weights (F32), about 120 KB, written in milliseconds. Its GGUF declares its
 * pooling (`bert.pooling_type`: mean or cls), as real bge / all-MiniLM / e5 files do.
 *
 * Tensors and metadata are those llama.cpp's BERT loader reads (node-llama-cpp 3.22.1's llama.cpp,
 * src/models/bert.cpp): token_embd, token_types (token_type_count 2), position_embd (context_length rows),
 * token_embd_norm (weight and bias), and per layer attn_q/k/v (weights and biases), attn_output,
 * attn_output_norm, ffn_up, ffn_down (with biases) and layer_output_norm. Every tensor written is one the loader
 * takes (it refuses a file with tensors it did not read).
 */
import { kv, writeGgufFile, type GgufFileSpec, type GgufKv, type GgufTensor } from './gguf-writer.ts';
import { deriveSeed, SeededRandom } from './seeded-random.ts';

/** llama.cpp's `enum llama_pooling_type` values a BERT GGUF declares. */
export const BERT_POOLING = { mean: 1, cls: 2 } as const;

export interface TinyBertOptions {
  /** `bert.pooling_type`. Defaults to 'mean'. */
  pooling?: keyof typeof BERT_POOLING;
  /** Defaults to 32. */
  embeddingLength?: number;
  /** Defaults to 2. */
  blockCount?: number;
  /** Defaults to 4. */
  headCount?: number;
  /** Defaults to 64. */
  feedForwardLength?: number;
  /** Position embeddings (`bert.context_length`): the longest input. Defaults to 128. */
  contextLength?: number;
  /** Weight seed. Defaults to 1. */
  seed?: number;
}

export const DEFAULT_TINY_BERT: Required<TinyBertOptions> = {
  pooling: 'mean',
  embeddingLength: 32,
  blockCount: 2,
  headCount: 4,
  feedForwardLength: 64,
  contextLength: 128,
  seed: 1,
};

/** The special tokens at the ids llama.cpp's WordPiece vocabulary assumes by default (BERT's own). */
export const BERT_PAD_ID = 0;
export const BERT_UNK_ID = 100;
export const BERT_CLS_ID = 101;
export const BERT_SEP_ID = 102;
export const BERT_MASK_ID = 103;

/** WordPiece's word-start marker as llama.cpp's GGUFs store it (U+2581); pieces without it continue a word. */
const WORD_START = '\u2581';
const WORDS = `the a an of and to in is it cat dog sat on mat red blue green fast slow big small house tree sky sun
moon water fire earth hello world test model vector embed search query document text one two three four five`;
const CHARACTERS = 'abcdefghijklmnopqrstuvwxyz0123456789.,!?\'"-:;()';

/** The tiny WordPiece vocabulary: [PAD], [unused*], [UNK] [CLS] [SEP] [MASK], then words and characters. */
export function tinyBertVocabulary(): { tokens: string[]; tokenTypes: number[] } {
  const tokens: string[] = ['[PAD]'];
  for (let i = 1; i < BERT_UNK_ID; i++) tokens.push(`[unused${i - 1}]`);
  tokens.push('[UNK]', '[CLS]', '[SEP]', '[MASK]');
  const pieces = new Set<string>();
  for (const w of WORDS.split(/\s+/).filter(Boolean)) pieces.add(WORD_START + w);
  for (const c of CHARACTERS) {
    pieces.add(WORD_START + c);
    pieces.add(c);
  }
  tokens.push(...pieces);
  // 3 = control (the special and unused tokens), 1 = normal.
  const tokenTypes = tokens.map((_, id) => (id <= BERT_MASK_ID ? 3 : 1));
  return { tokens, tokenTypes };
}

export function resolveTinyBertOptions(options: TinyBertOptions = {}): Required<TinyBertOptions> {
  const resolved = { ...DEFAULT_TINY_BERT };
  for (const [key, value] of Object.entries(options))
    if (value !== undefined) (resolved as Record<string, unknown>)[key] = value;
  return resolved;
}

export function tinyBertSpec(options: TinyBertOptions = {}): GgufFileSpec {
  const o = resolveTinyBertOptions(options);
  const vocab = tinyBertVocabulary();
  const e = o.embeddingLength;
  const ff = o.feedForwardLength;
  if (e % o.headCount !== 0) throw new RangeError('tiny bert: embeddingLength must be a multiple of headCount');
  const tokenizer: GgufKv[] = [
    kv.string('tokenizer.ggml.model', 'bert'),
    kv.stringArray('tokenizer.ggml.tokens', vocab.tokens),
    kv.i32Array('tokenizer.ggml.token_type', vocab.tokenTypes),
    kv.u32('tokenizer.ggml.token_type_count', 2),
    kv.u32('tokenizer.ggml.bos_token_id', BERT_CLS_ID),
    kv.u32('tokenizer.ggml.cls_token_id', BERT_CLS_ID),
    kv.u32('tokenizer.ggml.seperator_token_id', BERT_SEP_ID),
    kv.u32('tokenizer.ggml.padding_token_id', BERT_PAD_ID),
    kv.u32('tokenizer.ggml.unknown_token_id', BERT_UNK_ID),
    kv.u32('tokenizer.ggml.mask_token_id', BERT_MASK_ID),
    kv.bool('tokenizer.ggml.add_bos_token', true),
    kv.bool('tokenizer.ggml.add_eos_token', false),
  ];
  const metadata: GgufKv[] = [
    kv.string('general.architecture', 'bert'),
    kv.string('general.name', `hearth-tiny-bert-${o.pooling}`),
    kv.u32('general.alignment', 32),
    kv.u32('general.file_type', 0),
    kv.u32('bert.context_length', o.contextLength),
    kv.u32('bert.embedding_length', e),
    kv.u32('bert.block_count', o.blockCount),
    kv.u32('bert.feed_forward_length', ff),
    kv.u32('bert.attention.head_count', o.headCount),
    kv.f32('bert.attention.layer_norm_epsilon', 1e-12),
    kv.bool('bert.attention.causal', false),
    kv.u32('bert.pooling_type', BERT_POOLING[o.pooling]),
    ...tokenizer,
  ];
  const random = (name: string, std: number) => {
    const limit = std * Math.sqrt(3);
    let r = new SeededRandom(deriveSeed(o.seed, name));
    return (row: Float32Array, index: number): void => {
      if (index === 0) r = new SeededRandom(deriveSeed(o.seed, name));
      r.fillSymmetric(row, limit);
    };
  };
  const matrix = (name: string, inputs: number, outputs: number, std = 1 / Math.sqrt(inputs)): GgufTensor => ({
    name,
    shape: [inputs, outputs],
    type: 'F32',
    values: random(name, std),
  });
  const vector = (name: string, length: number, value: number | null): GgufTensor => ({
    name,
    shape: [length],
    type: 'F32',
    values: value === null ? random(name, 0.1) : (row: Float32Array) => void row.fill(value),
  });
  /** A dense layer `name`: its weight (inputs x outputs, random) and its bias (random, small). */
  const linear = (name: string, inputs: number, outputs: number) => [
    matrix(`${name}.weight`, inputs, outputs),
    vector(`${name}.bias`, outputs, null),
  ];
  /** A layer norm `name`: weight 1, bias 0 (the identity, before the data moves it). */
  const norm = (name: string, length: number) => [
    vector(`${name}.weight`, length, 1),
    vector(`${name}.bias`, length, 0),
  ];
  const tensors: GgufTensor[] = [
    matrix('token_embd.weight', e, vocab.tokens.length, 1),
    matrix('token_types.weight', e, 2, 0.1),
    matrix('position_embd.weight', e, o.contextLength, 0.5),
    ...norm('token_embd_norm', e),
  ];
  for (let b = 0; b < o.blockCount; b++) {
    const p = `blk.${b}.`;
    tensors.push(
      ...linear(`${p}attn_q`, e, e),
      ...linear(`${p}attn_k`, e, e),
      ...linear(`${p}attn_v`, e, e),
      ...linear(`${p}attn_output`, e, e),
      ...norm(`${p}attn_output_norm`, e),
      ...linear(`${p}ffn_up`, e, ff),
      ...linear(`${p}ffn_down`, ff, e),
      ...norm(`${p}layer_output_norm`, e),
    );
  }
  return { metadata, tensors };
}

/** Writes the tiny BERT at `path` (not atomically; see test-model-path.ts). Returns the size in bytes. */
export function writeTinyBert(path: string, options: TinyBertOptions = {}): Promise<number> {
  return writeGgufFile(path, tinyBertSpec(options));
}
