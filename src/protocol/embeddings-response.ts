import type { EmbeddingsRequest } from './embeddings-request.ts';

/** OpenAI's embeddings answer: one `embedding` object per input, in the request's order. */
export interface EmbeddingsResponse {
  object: 'list';
  data: Array<{ object: 'embedding'; index: number; embedding: number[] | string }>;
  model: string;
  usage: { prompt_tokens: number; total_tokens: number };
}

/**
 * The answer to an embeddings request: each vector as numbers (`float`) or as its little-endian float32
 * bytes in base64 (`base64`, what the openai SDKs ask for by default and decode back to the same numbers).
 */
export function embeddingsResponse(
  model: string,
  vectors: readonly Float32Array[],
  format: EmbeddingsRequest['encodingFormat'],
  promptTokens: number,
): EmbeddingsResponse {
  return {
    object: 'list',
    data: vectors.map((v, index) => ({
      object: 'embedding',
      index,
      embedding: format === 'base64' ? float32Base64(v) : Array.from(v),
    })),
    model,
    usage: { prompt_tokens: promptTokens, total_tokens: promptTokens },
  };
}

/** The vector's float32 values, little-endian, base64-encoded. */
function float32Base64(v: Float32Array): string {
  const bytes = Buffer.alloc(v.length * 4);
  for (let i = 0; i < v.length; i++) bytes.writeFloatLE(v[i]!, i * 4);
  return bytes.toString('base64');
}
