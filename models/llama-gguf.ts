/**
 * The llama architecture as a GGUF spec: llama.cpp's metadata keys and tensor names/shapes, filled
 * with seeded random weights scaled so activations stay finite (unit RMS-norm weights, matrices with
 * std 1/sqrt(fan_in), logits with std `logitScale`). Shared by the tiny and the realistic writers.
 *
 * Pure: builds a spec whose row generators draw from per-tensor seeded streams, so the bytes depend
 * only on the options (and on no iteration order elsewhere).
 */
import { kv, type GgmlTensorType, type GgufFileSpec, type GgufKv, type GgufTensor } from './gguf-writer.ts';
import { deriveSeed, SeededRandom } from './seeded-random.ts';

/** The transformer's shape, in llama.cpp's metadata terms. */
export interface LlamaShape {
  /** llama.context_length (training context). */
  contextLength: number;
  /** llama.embedding_length: the model width. */
  embeddingLength: number;
  /** llama.block_count: layers. */
  blockCount: number;
  /** llama.feed_forward_length. */
  feedForwardLength: number;
  /** llama.attention.head_count. */
  headCount: number;
  /** llama.attention.head_count_kv (grouped-query attention when < headCount). */
  headCountKv: number;
}

export interface LlamaGgufOptions {
  /** general.name */
  name: string;
  shape: LlamaShape;
  /** The tokenizer.* entries; must include tokenizer.ggml.tokens (the vocabulary size is its length). */
  tokenizer: readonly GgufKv[];
  /** token_embd.weight */
  embeddingType: GgmlTensorType;
  /** The per-layer projection matrices. */
  matrixType: GgmlTensorType;
  /** output.weight (the LM head; never tied to the embedding here). */
  outputType: GgmlTensorType;
  /** PRNG seed for all weights. */
  seed: number;
  /** Standard deviation of the logits for a unit-RMS hidden state: higher -> peakier distributions. */
  logitScale: number;
  /**
   * Optional: edits a weight matrix row after its random fill (rows are ne[1] indices: a token id for
   * token_embd/output, an output dimension for the projections). Used to program behaviour (scripted-reply.ts).
   */
  adjustRow?: (tensorName: string, row: Float32Array, rowIndex: number) => void;
}

export const LLAMA_RMS_EPSILON = 1e-5;
export const LLAMA_ROPE_FREQ_BASE = 10000;

/** ggml's `enum llama_ftype` for the dominant weight type. */
const FILE_TYPE: Record<GgmlTensorType, number> = { F32: 0, F16: 1, Q8_0: 7 };

export function vocabularySize(tokenizer: readonly GgufKv[]): number {
  const tokens = tokenizer.find((e) => e.key === 'tokenizer.ggml.tokens');
  if (tokens === undefined || !Array.isArray(tokens.value)) throw new Error('tokenizer.ggml.tokens is missing');
  return tokens.value.length;
}

/** The LlamaShape fields of a model's options (which carry other settings beside them). */
export function llamaShapeOf(o: LlamaShape): LlamaShape {
  const { contextLength, embeddingLength, blockCount, feedForwardLength, headCount, headCountKv } = o;
  return { contextLength, embeddingLength, blockCount, feedForwardLength, headCount, headCountKv };
}

export function validateLlamaShape(shape: LlamaShape): void {
  const positive = Object.entries(shape).find(([, v]) => !Number.isInteger(v) || v < 1);
  if (positive !== undefined) throw new RangeError(`llama shape: ${positive[0]} must be a positive integer`);
  if (shape.embeddingLength % shape.headCount !== 0) {
    throw new RangeError('llama shape: embeddingLength must be a multiple of headCount');
  }
  if (shape.headCount % shape.headCountKv !== 0) {
    throw new RangeError('llama shape: headCount must be a multiple of headCountKv');
  }
  if ((shape.embeddingLength / shape.headCount) % 2 !== 0)
    throw new RangeError('llama shape: head size must be even (RoPE)');
}

/** Total weights (parameters) of a llama of this shape and vocabulary. */
export function llamaParameterCount(shape: LlamaShape, vocabSize: number): number {
  const e = shape.embeddingLength;
  const kvWidth = (e / shape.headCount) * shape.headCountKv;
  const perBlock = 2 * e + e * e * 2 + e * kvWidth * 2 + 3 * e * shape.feedForwardLength;
  return vocabSize * e * 2 + e + shape.blockCount * perBlock;
}

function constant(value: number) {
  return (row: Float32Array): void => void row.fill(value);
}

/**
 * Uniform weights with the given std, drawn row by row from the tensor's own seeded stream.
 * The stream restarts at row 0, so the same spec can be encoded more than once.
 */
function randomRows(seed: number, tensorName: string, std: number) {
  const limit = std * Math.sqrt(3);
  let random = new SeededRandom(deriveSeed(seed, tensorName));
  return (row: Float32Array, rowIndex: number): void => {
    if (rowIndex === 0) random = new SeededRandom(deriveSeed(seed, tensorName));
    random.fillSymmetric(row, limit);
  };
}

export function llamaGgufSpec(options: LlamaGgufOptions): GgufFileSpec {
  const { shape, seed } = options;
  validateLlamaShape(shape);
  const vocab = vocabularySize(options.tokenizer);
  const e = shape.embeddingLength;
  const headSize = e / shape.headCount;
  const kvWidth = headSize * shape.headCountKv;
  const ff = shape.feedForwardLength;

  const metadata: GgufKv[] = [
    kv.string('general.architecture', 'llama'),
    kv.string('general.name', options.name),
    kv.u32('general.alignment', 32),
    kv.u32('general.file_type', FILE_TYPE[options.matrixType]),
    kv.u32('general.quantization_version', 2),
    kv.u32('llama.vocab_size', vocab),
    kv.u32('llama.context_length', shape.contextLength),
    kv.u32('llama.embedding_length', e),
    kv.u32('llama.block_count', shape.blockCount),
    kv.u32('llama.feed_forward_length', ff),
    kv.u32('llama.rope.dimension_count', headSize),
    kv.f32('llama.rope.freq_base', LLAMA_ROPE_FREQ_BASE),
    kv.u32('llama.attention.head_count', shape.headCount),
    kv.u32('llama.attention.head_count_kv', shape.headCountKv),
    kv.f32('llama.attention.layer_norm_rms_epsilon', LLAMA_RMS_EPSILON),
    ...options.tokenizer,
  ];

  const adjust = options.adjustRow;
  const matrix = (
    name: string,
    inputs: number,
    outputs: number,
    type: GgmlTensorType,
    std = 1 / Math.sqrt(inputs),
  ): GgufTensor => {
    const random = randomRows(seed, name, std);
    const values =
      adjust === undefined
        ? random
        : (row: Float32Array, rowIndex: number): void => {
            random(row, rowIndex);
            adjust(name, row, rowIndex);
          };
    return { name, shape: [inputs, outputs], type, values };
  };
  const norm = (name: string): GgufTensor => ({ name, shape: [e], type: 'F32', values: constant(1) });

  const tensors: GgufTensor[] = [
    matrix('token_embd.weight', e, vocab, options.embeddingType, 1),
    norm('output_norm.weight'),
    matrix('output.weight', e, vocab, options.outputType, options.logitScale / Math.sqrt(e)),
  ];
  for (let b = 0; b < shape.blockCount; b++) {
    const p = `blk.${b}.`;
    tensors.push(
      norm(`${p}attn_norm.weight`),
      matrix(`${p}attn_q.weight`, e, e, options.matrixType),
      matrix(`${p}attn_k.weight`, e, kvWidth, options.matrixType),
      matrix(`${p}attn_v.weight`, e, kvWidth, options.matrixType),
      matrix(`${p}attn_output.weight`, e, e, options.matrixType),
      norm(`${p}ffn_norm.weight`),
      matrix(`${p}ffn_gate.weight`, e, ff, options.matrixType),
      matrix(`${p}ffn_up.weight`, e, ff, options.matrixType),
      matrix(`${p}ffn_down.weight`, ff, e, options.matrixType),
    );
  }
  return { metadata, tensors };
}
