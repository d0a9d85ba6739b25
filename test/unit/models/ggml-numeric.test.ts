import { describe, expect, it } from 'vitest';
import * as ggml from '../../../models/ggml-numeric.ts';
import { SeededRandom } from '../../../models/seeded-random.ts';

describe('f16 conversion', () => {
  it('round-trips every finite half exactly', () => {
    const mismatches: number[] = [];
    for (let bits = 0; bits < 0x10000; bits++) {
      if (((bits >>> 10) & 0x1f) === 0x1f) continue; // inf / NaN
      if (ggml.f32ToF16Bits(ggml.f16BitsToF32(bits)) !== bits) mismatches.push(bits);
    }
    expect(mismatches).toEqual([]);
  });

  it('rounds to nearest, ties to even, like F16C', () => {
    expect(ggml.f32ToF16Bits(1)).toBe(0x3c00);
    expect(ggml.f32ToF16Bits(-2)).toBe(0xc000);
    expect(ggml.f32ToF16Bits(65504)).toBe(0x7bff);
    expect(ggml.f32ToF16Bits(1 + 2 ** -11)).toBe(0x3c00); // tie -> even mantissa 0
    expect(ggml.f32ToF16Bits(1 + 3 * 2 ** -11)).toBe(0x3c02); // tie -> even mantissa 2
    expect(ggml.f32ToF16Bits(1 + 2 ** -11 + 2 ** -20)).toBe(0x3c01); // above the tie
    expect(ggml.f32ToF16Bits(65520)).toBe(0x7c00); // tie above max rounds to inf
    expect(ggml.f32ToF16Bits(2 ** -24)).toBe(0x0001); // smallest subnormal
    expect(ggml.f32ToF16Bits(2 ** -25)).toBe(0x0000); // tie -> even (zero)
    expect(ggml.f32ToF16Bits(3 * 2 ** -25)).toBe(0x0002); // tie -> even
    expect(ggml.f32ToF16Bits(-0)).toBe(0x8000);
    expect(ggml.f32ToF16Bits(Infinity)).toBe(0x7c00);
    expect(ggml.f32ToF16Bits(NaN) & 0x7c00).toBe(0x7c00);
    expect(ggml.f32ToF16Bits(NaN) & 0x3ff).not.toBe(0);
  });
});

describe('Q8_0', () => {
  it('stores an f16 scale amax/127 and int8 quants rounded half away from zero', () => {
    const values = new Float32Array(32);
    values[0] = 127; // amax 127 -> d = 1, so quants are the values rounded
    values[1] = 0.5;
    values[2] = -0.5;
    values[3] = 2.5;
    values[4] = -2.5;
    values[5] = -127;
    values[6] = 1.49;
    const out = new Uint8Array(ggml.Q8_0_BLOCK_BYTES);
    expect(ggml.quantizeQ8_0(values, out)).toBe(34);
    expect(out[0]! | (out[1]! << 8)).toBe(0x3c00); // d = 1.0
    const q = new Int8Array(out.buffer, 2, 32);
    expect([...q.slice(0, 8)]).toEqual([127, 1, -1, 3, -3, -127, 1, 0]);
  });

  it('encodes an all-zero block as zero scale and zero quants', () => {
    const out = new Uint8Array(ggml.Q8_0_BLOCK_BYTES).fill(0xff);
    ggml.quantizeQ8_0(new Float32Array(32), out);
    expect([...out]).toEqual(new Array(34).fill(0));
  });

  it('round-trips within half a quantization step (plus the f16 scale error)', () => {
    const random = new SeededRandom(42);
    const values = new Float32Array(32 * 64);
    for (let i = 0; i < values.length; i++) values[i] = random.symmetric(i % 97 === 0 ? 10 : 1);
    const bytes = new Uint8Array(ggml.q8_0ByteLength(values.length));
    ggml.quantizeQ8_0(values, bytes);
    const restored = ggml.dequantizeQ8_0(bytes, values.length);
    for (let block = 0; block < values.length; block += 32) {
      const slice = values.subarray(block, block + 32);
      const amax = Math.max(...slice.map(Math.abs));
      const step = amax / 127;
      for (let j = 0; j < 32; j++) {
        // |x - q*d16| <= step/2 + |q| * |d - d16|, with |q| <= 127 and |d - d16| <= d * 2^-11
        expect(Math.abs(restored[block + j]! - slice[j]!)).toBeLessThanOrEqual(step / 2 + amax * 2 ** -11 + 1e-7);
      }
      expect(Math.abs(restored[block]! - values[block]!)).toBeLessThan(step);
    }
  });

  it('rejects lengths that are not whole blocks', () => {
    expect(() => ggml.q8_0ByteLength(33)).toThrow(RangeError);
    expect(() => ggml.quantizeQ8_0(new Float32Array(64), new Uint8Array(34))).toThrow(RangeError);
  });
});

describe('SeededRandom', () => {
  it('is reproducible per seed and differs across seeds', () => {
    const a = new SeededRandom(7);
    const b = new SeededRandom(7);
    const c = new SeededRandom(8);
    const seqA = Array.from({ length: 5 }, () => a.nextUint32());
    expect(Array.from({ length: 5 }, () => b.nextUint32())).toEqual(seqA);
    expect(Array.from({ length: 5 }, () => c.nextUint32())).not.toEqual(seqA);
    // the reference mulberry32 (Tommy Ettinger's, as commonly published) for seed 7
    expect(seqA.slice(0, 3)).toEqual([50271532, 266108690, 4195786334]);
  });
});
