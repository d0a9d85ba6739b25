import type { RealisticLlamaOptions } from '../../models/realistic-llama.ts';

/** The benchmark model shapes (bench:engine, bench/gpu-check.ts): random Q8_0 weights from models/realistic-llama.ts; Q4_K_M by llama-quantize. */
export const SHAPES: Record<
  string,
  { label: string; maxTokens: number; options?: RealisticLlamaOptions; quantizeTo?: string }
> = {
  '56m': { label: '56M llama (width 512, 8 layers, 8/4 heads, FFN 1376), Q8_0', maxTokens: 128 },
  '0.5b-q8': {
    label: '0.5B-class (width 896, 24 layers, 14/2 heads, FFN 4864, 32k vocab), Q8_0',
    maxTokens: 32,
    options: { embeddingLength: 896, blockCount: 24, headCount: 14, headCountKv: 2, feedForwardLength: 4864 },
  },
  // Head sizes other than 64 (Phi-3's 96, Gemma 3's 256), for the attention kernel (bench:cpu-kernels).
  head96: {
    label: 'head size 96 (width 768, 8 layers, 8/2 heads, FFN 2048), Q8_0',
    maxTokens: 128,
    options: { embeddingLength: 768, headCount: 8, headCountKv: 2, feedForwardLength: 2048 },
  },
  head256: {
    label: 'head size 256 (width 1024, 8 layers, 4/1 heads, FFN 2816), Q8_0',
    maxTokens: 128,
    options: { embeddingLength: 1024, headCount: 4, headCountKv: 1, feedForwardLength: 2816 },
  },
  '0.5b-q4km': {
    label: '0.5B-class, Q4_K_M (llama-quantize of the Q8_0 file: the writer has no K-quants)',
    maxTokens: 32,
    options: { embeddingLength: 896, blockCount: 24, headCount: 14, headCountKv: 2, feedForwardLength: 4864 },
    quantizeTo: 'Q4_K_M',
  },
};
