import { describe, expect, it } from 'vitest';
import { servesEmbeddingsOnly } from '../../../src/worker/model-kind.ts';

/** The embeddings-only rule (the node-llama-cpp engine's copy of native/src/model_kind.cpp) on GGUF metadata shapes. */
describe('servesEmbeddingsOnly', () => {
  it.each([
    ['bert', {}, true],
    ['nomic-bert', {}, true],
    ['jina-bert-v2', {}, true],
    ['modern-bert', {}, true],
    ['qwen3', { attention: { causal: false } }, true],
    ['llama', {}, false],
    ['qwen3', { attention: { causal: true } }, false],
    ['qwen3', { pooling_type: 3 }, false], // a decoder embedding model (Qwen3-Embedding) still generates
  ] as const)('%s %j -> %s', (arch, own, expected) => {
    expect(servesEmbeddingsOnly({ general: { architecture: arch }, [arch]: own })).toBe(expected);
  });

  it('is false for metadata without an architecture', () => {
    expect(servesEmbeddingsOnly({})).toBe(false);
    expect(servesEmbeddingsOnly({ general: {} })).toBe(false);
  });
});
