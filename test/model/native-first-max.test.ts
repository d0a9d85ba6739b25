/**
 * The greedy choice (native/src/first_max.h): the vectorised search answers exactly what the plain scan of llama.cpp's
 * greedy sampler answers (the first of equal maxima; NaN never chosen unless it comes first and nothing is larger),
 * on the row lengths a vocabulary has and on the edge cases of float comparison. Needs the built addon.
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
