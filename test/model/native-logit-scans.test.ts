/**
 * The samplers' shortcuts over a row of logits, held to their references on the row lengths a vocabulary has and
 * on the edge cases of float comparison. The greedy choice (native/src/first_max.h) answers exactly what the plain
 * scan of llama.cpp's greedy sampler answers (the first of equal maxima; NaN never chosen unless it comes first and
 * nothing is larger). Top-k's candidates (native/src/top_k.h) are the k largest, largest first, the lower token first
 * among equals. Needs the built addon.
 */
import { describe, expect, it } from 'vitest';
import { loadHearthNative } from '../../native/binding.ts';

const native = loadHearthNative();

/** A seeded generator (mulberry32), so every run checks the same rows. */
function random(seed: number): () => number {
  let a = seed >>> 0;
  return () => {
    a = (a + 0x6d2b79f5) >>> 0;
    let t = a;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
}

describe.skipIf(!native.ok)('greedy choice: firstMaxIndex', () => {
  const binding = native.ok ? native.binding : (undefined as never);
  const both = (values: Float32Array): [number, number] => [
    binding.firstMaxIndex(values),
    binding.firstMaxIndex(values, true),
  ];

  it('equals the plain scan on random rows of every length around the 16-lane blocks and vocabulary sizes', () => {
    const next = random(7);
    const lengths = [1, 2, 15, 16, 17, 63, 64, 65, 127, 128, 129, 1000, 32_000, 32_001, 151_936];
    for (const n of lengths)
      for (let round = 0; round < 20; round++) {
        const values = Float32Array.from({ length: n }, () => (next() - 0.5) * 40);
        const [fast, scan] = both(values);
        expect(fast, `length ${n}, round ${round}`).toBe(scan);
      }
  });

  it('takes the first of equal maxima, wherever they are', () => {
    const next = random(11);
    for (let round = 0; round < 200; round++) {
      const n = 64 + Math.floor(next() * 4000);
      // Few distinct values: the maximum occurs many times.
      const values = Float32Array.from({ length: n }, () => Math.floor(next() * 4));
      const [fast, scan] = both(values);
      expect(fast).toBe(scan);
      expect(values[fast]).toBe(3);
      expect(values.slice(0, fast).includes(3)).toBe(false);
    }
  });

  it('answers as the scan with NaN, infinities and signed zeros in the row', () => {
    const n = 4099; // a partial last block
    const cases: Array<[string, (v: Float32Array) => void]> = [
      ['NaN first', (v) => (v[0] = Number.NaN)],
      ['NaN in the first block', (v) => (v[5] = Number.NaN)],
      ['NaN later, before the largest', (v) => ((v[100] = Number.NaN), (v[200] = 50))],
      ['all NaN', (v) => v.fill(Number.NaN)],
      ['-Infinity everywhere', (v) => v.fill(Number.NEGATIVE_INFINITY)],
      ['+Infinity late', (v) => (v[4000] = Number.POSITIVE_INFINITY)],
      ['zeros of both signs as the largest', (v) => (v.fill(-1), (v[70] = -0), (v[90] = 0))],
      ['the largest in the last, partial block', (v) => (v[n - 1] = 99)],
    ];
    const next = random(3);
    for (const [what, edit] of cases) {
      const values = Float32Array.from({ length: n }, () => next() * 10 - 5);
      edit(values);
      const [fast, scan] = both(values);
      expect(fast, what).toBe(scan);
    }
  });

  it('refuses anything but a Float32Array', () => {
    expect(() => binding.firstMaxIndex([1, 2, 3] as unknown as Float32Array)).toThrow(/Float32Array/);
  });
});

describe.skipIf(!native.ok)('top-k candidates: topKTokens', () => {
  const binding = native.ok ? native.binding : (undefined as never);
  /** The reference: the tokens sorted by logit (largest first, lower token first among equals), NaN last, the first k. */
  const reference = (values: Float32Array, k: number) => {
    const tokens = [...values.keys()];
    const numbers = tokens.filter((t) => !Number.isNaN(values[t]));
    const nans = tokens.filter((t) => Number.isNaN(values[t]));
    return [...numbers.sort((a, b) => values[b]! - values[a]! || a - b), ...nans].slice(0, k);
  };

  it('keeps the k largest, largest first, on random rows of every length and spread', () => {
    const next = random(5);
    for (const spread of [0.5, 40, 4000])
      for (const n of [1, 16, 17, 40, 41, 63, 64, 65, 200, 1000, 32_000, 32_003])
        for (const k of [1, 2, 16, 40, 100, 1000, n])
          if (k <= n) {
            const values = Float32Array.from({ length: n }, () => (next() - 0.5) * spread);
            expect([...binding.topKTokens(values, k)], `spread ${spread}, length ${n}, k ${k}`).toEqual(
              reference(values, k),
            );
          }
  });

  it('orders equal logits by token and cuts a tie at the k-th place at the lower tokens', () => {
    const next = random(9);
    for (let round = 0; round < 100; round++) {
      const n = 64 + Math.floor(next() * 3000);
      const values = Float32Array.from({ length: n }, () => Math.floor(next() * 6));
      const k = 1 + Math.floor(next() * 60);
      expect([...binding.topKTokens(values, k)]).toEqual(reference(values, k));
    }
  });

  it('finds the largest wherever they are, with -Infinity around them and far below the rest', () => {
    const n = 5003;
    const values = new Float32Array(n).fill(Number.NEGATIVE_INFINITY);
    for (const at of [0, 15, 16, 4990, 5000, 5002]) values[at] = at;
    expect([...binding.topKTokens(values, 6)]).toEqual([5002, 5000, 4990, 16, 15, 0]);
    values.fill(-1e30, 100, 200); // far below the largest: no bound of the search holds them
    values[150] = 1e6;
    expect([...binding.topKTokens(values, 8)]).toEqual(reference(values, 8));
  });

  it('takes the full sort for a row that starts with NaN or holds an infinity, and keeps NaN out of the way', () => {
    const next = random(13);
    const row = () => Float32Array.from({ length: 2000 }, () => next() * 10);
    const withNaN = row();
    withNaN[0] = Number.NaN;
    withNaN[700] = 50;
    withNaN[1500] = Number.NaN;
    expect([...binding.topKTokens(withNaN, 5)]).toEqual(reference(withNaN, 5));
    expect([...binding.topKTokens(Float32Array.of(Number.NaN, 1, Number.NaN, 2), 4)]).toEqual([3, 1, 0, 2]);
    const nanInside = row(); // the bounded search: a NaN is never counted or gathered
    nanInside[900] = Number.NaN;
    expect([...binding.topKTokens(nanInside, 40)]).toEqual(reference(nanInside, 40));
    const withInfinity = row();
    withInfinity[1234] = Number.POSITIVE_INFINITY;
    expect([...binding.topKTokens(withInfinity, 5)]).toEqual(reference(withInfinity, 5));
  });

  it('refuses k outside 1..n and anything but a Float32Array', () => {
    expect(() => binding.topKTokens(new Float32Array(4), 0)).toThrow(/k: 1\.\.values\.length/);
    expect(() => binding.topKTokens(new Float32Array(4), 5)).toThrow(/k: 1\.\.values\.length/);
    expect(() => binding.topKTokens([1, 2] as unknown as Float32Array, 1)).toThrow(/Float32Array/);
  });
});
