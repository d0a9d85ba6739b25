import { describe, expect, it } from 'vitest';
import { ApiError } from '../../../src/errors/index.ts';
import { MAX_EMBEDDING_INPUTS, validateEmbeddingsRequest } from '../../../src/protocol/embeddings-request.ts';
import { embeddingsResponse } from '../../../src/protocol/embeddings-response.ts';

const refusal = (body: unknown): { status: number; param: string | null } => {
  try {
    validateEmbeddingsRequest(body);
  } catch (e) {
    if (e instanceof ApiError) return { status: e.status, param: e.param };
    throw e;
  }
  throw new Error('accepted');
};

describe('validateEmbeddingsRequest', () => {
  it('takes every input shape, in order', () => {
    expect(validateEmbeddingsRequest({ model: 'm', input: 'a' }).inputs).toEqual(['a']);
    expect(validateEmbeddingsRequest({ model: 'm', input: ['a', 'b'] }).inputs).toEqual(['a', 'b']);
    expect(validateEmbeddingsRequest({ model: 'm', input: [1, 2, 3] }).inputs).toEqual([[1, 2, 3]]);
    expect(validateEmbeddingsRequest({ model: 'm', input: [[1, 2], [3]] }).inputs).toEqual([[1, 2], [3]]);
    expect(
      [['a'], 'a', [1, 2], [[1, 2]]].map((input) => validateEmbeddingsRequest({ model: 'm', input }).single),
    ).toEqual([false, true, true, false]);
    expect(validateEmbeddingsRequest({ model: 'm', input: 'a', user: 'u', dimensions: null }).encodingFormat).toBe(
      'float',
    );
    expect(validateEmbeddingsRequest({ model: 'm', input: 'a', encoding_format: 'base64' }).encodingFormat).toBe(
      'base64',
    );
  });

  it('refuses with a 400 naming the field', () => {
    expect(refusal({ model: 'm', input: 'a', dimensions: 64 })).toEqual({ status: 400, param: 'dimensions' });
    expect(refusal({ model: 'm', input: '' })).toEqual({ status: 400, param: 'input' });
    expect(refusal({ model: 'm', input: ['a', ''] })).toEqual({ status: 400, param: 'input[1]' });
    expect(refusal({ model: 'm', input: [[1], []] })).toEqual({ status: 400, param: 'input[1]' });
    expect(refusal({ model: 'm', input: [[1, 1.5]] })).toEqual({ status: 400, param: 'input[0][1]' });
    expect(refusal({ model: 'm', input: [1, 'a'] })).toEqual({ status: 400, param: 'input[1]' });
    expect(refusal({ model: 'm', input: ['a', 7] })).toEqual({ status: 400, param: 'input[1]' });
    expect(refusal({ model: 'm', input: Array.from({ length: MAX_EMBEDDING_INPUTS + 1 }, () => 'a') })).toEqual({
      status: 400,
      param: 'input',
    });
    expect(refusal({ model: 'm', input: 'a', encoding_format: 'int8' })).toEqual({
      status: 400,
      param: 'encoding_format',
    });
    expect(refusal({ model: 'm', input: 'a', user: 3 })).toEqual({ status: 400, param: 'user' });
    expect(refusal({ model: 'm', input: 'a', n: 1 })).toEqual({ status: 400, param: 'n' });
    expect(refusal({ input: 'a' })).toEqual({ status: 400, param: 'model' });
    expect(refusal([])).toEqual({ status: 400, param: null });
  });

  it('accepts MAX_EMBEDDING_INPUTS inputs', () => {
    expect(
      validateEmbeddingsRequest({ model: 'm', input: Array.from({ length: MAX_EMBEDDING_INPUTS }, () => 'a') }).inputs,
    ).toHaveLength(MAX_EMBEDDING_INPUTS);
  });
});

describe('embeddingsResponse', () => {
  it('writes base64 as the little-endian float32 bytes of the float answer', () => {
    const v = Float32Array.from([0.6, -0.8, 1e-7]);
    const floats = embeddingsResponse('m', [v], 'float', 3);
    const base64 = embeddingsResponse('m', [v], 'base64', 3);
    expect(floats).toMatchObject({ object: 'list', model: 'm', usage: { prompt_tokens: 3, total_tokens: 3 } });
    const bytes = Buffer.from(base64.data[0]!.embedding as string, 'base64');
    expect(Array.from({ length: 3 }, (_, i) => bytes.readFloatLE(i * 4))).toEqual(floats.data[0]!.embedding);
  });
});
