/**
 * How tests compare embedding vectors computed along two paths whose arithmetic differs (inputs packed into one
 * pass or one per pass, the native engine or node-llama-cpp, another CPU's kernels).
 *
 * The claim "the same vector" holds up to the arithmetic's rounding, and ggml's arithmetic is half precision in
 * places: the KV cache is f16, f16 weights meet activations rounded to f16, and which kernels round depends on the
 * CPU's instructions and on the batch size (measured: the tiny llama's packed and lone vectors 6e-4 apart,
 * relative, with every prebuilt library from x64 to zen4; stories260K's 1.5e-7 with the AVX-512 ones but 2.1e-4
 * with x64 and haswell). So the difference is measured relative to the vector's length, in units of f16's unit
 * roundoff, and it is never a bound on one component (the largest component difference of the tiny llama's unit
 * vectors was 1.2e-4 on a Zen 5, 1e-4 elsewhere: a bound there holds on one CPU only).
 *
 * A bound is only a test when the vectors of different inputs lie well outside it: `expectDistinct` says so for
 * the inputs a test uses (the tiny llama's lie 0.45 apart and more; stories260K's mean-pooled vectors only 4e-5,
 * inside its own f16 rounding, which is why packing is tested on the tiny llama).
 */
import { expect } from 'vitest';

/** IEEE half precision's unit roundoff, 2^-11. */
export const F16_UNIT_ROUNDOFF = 2 ** -11;

/** Two computations of one embedding agree within this distance relative to its length: 8 f16 unit roundoffs (3.9e-3). */
export const SAME_EMBEDDING = 8 * F16_UNIT_ROUNDOFF;

/** Vectors of different inputs lie at least this far apart, relative (10 x SAME_EMBEDDING), for the comparison to tell them apart. */
export const DISTINCT_EMBEDDINGS = 10 * SAME_EMBEDDING;

/** |a - b| / |b| (Euclidean). */
export function relativeDistance(a: ArrayLike<number>, b: ArrayLike<number>): number {
  if (a.length !== b.length) throw new Error(`vectors of ${a.length} and ${b.length} dimensions`);
  let diff = 0;
  let norm = 0;
  for (let i = 0; i < a.length; i++) {
    diff += (a[i]! - b[i]!) ** 2;
    norm += b[i]! ** 2;
  }
  return Math.sqrt(diff / norm);
}

/** `actual` is `expected` computed another way (within SAME_EMBEDDING). */
export function expectSameEmbedding(actual: ArrayLike<number>, expected: ArrayLike<number>, what = ''): void {
  expect(relativeDistance(actual, expected), what).toBeLessThan(SAME_EMBEDDING);
}

/** Every pair of `vectors` (of different inputs) lies at least DISTINCT_EMBEDDINGS apart. */
export function expectDistinct(vectors: ReadonlyArray<ArrayLike<number>>): void {
  for (let i = 0; i < vectors.length; i++) {
    for (let j = i + 1; j < vectors.length; j++)
      expect(relativeDistance(vectors[i]!, vectors[j]!), `inputs ${i} and ${j}`).toBeGreaterThan(DISTINCT_EMBEDDINGS);
  }
}
