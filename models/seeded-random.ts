/**
 * A seeded PRNG (mulberry32) for synthetic weights: same seed -> same sequence on every platform,
 * because it uses only 32-bit integer arithmetic (no Math.random, no transcendental functions).
 */
export class SeededRandom {
  #state: number;

  constructor(seed: number) {
    this.#state = seed >>> 0;
  }

  /** Next uint32. */
  nextUint32(): number {
    this.#state = (this.#state + 0x6d2b79f5) >>> 0;
    let t = this.#state;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return (t ^ (t >>> 14)) >>> 0;
  }

  /** Uniform in [0, 1). */
  next(): number {
    return this.nextUint32() / 4294967296;
  }

  /** Uniform in [-limit, limit). */
  symmetric(limit: number): number {
    return (this.next() * 2 - 1) * limit;
  }

  /** Fills `out` with uniform values in [-limit, limit) (std = limit / sqrt(3)). */
  fillSymmetric(out: Float32Array, limit: number): void {
    for (let i = 0; i < out.length; i++) out[i] = (this.nextUint32() / 2147483648 - 1) * limit;
  }
}

/** Derives an independent seed for a named stream (e.g. one tensor) from a base seed (FNV-1a over the name). */
export function deriveSeed(baseSeed: number, name: string): number {
  let hash = (0x811c9dc5 ^ baseSeed) >>> 0;
  for (let i = 0; i < name.length; i++) {
    hash ^= name.charCodeAt(i);
    hash = Math.imul(hash, 0x01000193) >>> 0;
  }
  return hash;
}
