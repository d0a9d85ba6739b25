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
  '0.5b-q4km': {
    label: '0.5B-class, Q4_K_M (llama-quantize of the Q8_0 file: the writer has no K-quants)',
    maxTokens: 32,
    options: { embeddingLength: 896, blockCount: 24, headCount: 14, headCountKv: 2, feedForwardLength: 4864 },
    quantizeTo: 'Q4_K_M',
  },
};
