/**
 * ggml's on-disk numeric formats, bit-exact with ggml's reference C code:
 * IEEE half floats (round to nearest, ties to even, like `GGML_FP32_TO_FP16` / F16C) and
 * Q8_0 blocks (`quantize_row_q8_0_ref`: 32 values -> one f16 scale + 32 int8).
 *
 * Pure functions, no I/O; safe on any thread. Scratch buffers are module-local and never escape.
 */

/** Values per Q8_0 block (ggml's QK8_0). */
export const Q8_0_BLOCK_VALUES = 32;
/** Bytes per Q8_0 block: a little-endian f16 scale followed by 32 int8 quants. */
export const Q8_0_BLOCK_BYTES = 2 + Q8_0_BLOCK_VALUES;

const scratchF32 = new Float32Array(1);
const scratchU32 = new Uint32Array(scratchF32.buffer);

/** fp32 -> fp16 bits, round to nearest even; overflow -> inf, NaN stays NaN (quiet). */
export function f32ToF16Bits(value: number): number {
  scratchF32[0] = value;
  const x = scratchU32[0]!;
  const sign = (x >>> 16) & 0x8000;
  const exponent = (x >>> 23) & 0xff;
  const mantissa = x & 0x7fffff;
  if (exponent === 0xff) return sign | 0x7c00 | (mantissa !== 0 ? 0x200 : 0);
  const halfExponent = exponent - 127 + 15;
  if (halfExponent >= 0x1f) return sign | 0x7c00;
  if (halfExponent <= 0) {
    // Subnormal half (or zero): value = m * 2^-24.
    if (halfExponent < -10) return sign;
    const full = mantissa | 0x800000;
    const shift = 14 - halfExponent;
    const halfway = 1 << (shift - 1);
    const remainder = full & ((1 << shift) - 1);
    let m = full >>> shift;
    if (remainder > halfway || (remainder === halfway && (m & 1) === 1)) m++;
    return sign | m; // a carry into the exponent field is the correct result
  }
  const remainder = mantissa & 0x1fff;
  let bits = sign | (halfExponent << 10) | (mantissa >>> 13);
  if (remainder > 0x1000 || (remainder === 0x1000 && (bits & 1) === 1)) bits++; // carry may give inf: correct
  return bits;
}

/** fp16 bits -> the exact fp32 value. */
export function f16BitsToF32(bits: number): number {
  const sign = bits & 0x8000 ? -1 : 1;
  const exponent = (bits >>> 10) & 0x1f;
  const mantissa = bits & 0x3ff;
  if (exponent === 0) return sign * mantissa * 2 ** -24;
  if (exponent === 0x1f) return mantissa === 0 ? sign * Infinity : NaN;
  return sign * (1 + mantissa / 1024) * 2 ** (exponent - 15);
}

/** Bytes that `count` values of a tensor type occupy. Q8_0 needs `count` to be a multiple of 32. */
export function q8_0ByteLength(count: number): number {
  if (count % Q8_0_BLOCK_VALUES !== 0) {
    throw new RangeError(`Q8_0 needs a multiple of ${Q8_0_BLOCK_VALUES} values, got ${count}`);
  }
  return (count / Q8_0_BLOCK_VALUES) * Q8_0_BLOCK_BYTES;
}

/** C's roundf: half away from zero (Math.round rounds half towards +inf). */
function roundHalfAwayFromZero(x: number): number {
  return x < 0 ? -Math.floor(-x + 0.5) : Math.floor(x + 0.5);
}

/**
 * Quantizes `values` (length a multiple of 32) into Q8_0 blocks written at `out[offset...]`,
 * in float32 arithmetic like ggml's `quantize_row_q8_0_ref`. Returns the number of bytes written.
 */
export function quantizeQ8_0(values: Float32Array, out: Uint8Array, offset = 0): number {
  const byteLength = q8_0ByteLength(values.length);
  if (offset + byteLength > out.length) throw new RangeError('quantizeQ8_0: output too small');
  const quants = new Int8Array(out.buffer, out.byteOffset, out.byteLength);
  let at = offset;
  for (let block = 0; block < values.length; block += Q8_0_BLOCK_VALUES) {
    let amax = 0;
    for (let j = 0; j < Q8_0_BLOCK_VALUES; j++) {
      const v = Math.abs(values[block + j]!);
      if (v > amax) amax = v;
    }
    const d = Math.fround(amax / 127);
    const id = d !== 0 ? Math.fround(1 / d) : 0;
    const scale = f32ToF16Bits(d);
    out[at] = scale & 0xff;
    out[at + 1] = scale >>> 8;
    for (let j = 0; j < Q8_0_BLOCK_VALUES; j++) {
      quants[at + 2 + j] = roundHalfAwayFromZero(Math.fround(values[block + j]! * id));
    }
    at += Q8_0_BLOCK_BYTES;
  }
  return byteLength;
}

/** Inverse of `quantizeQ8_0` (ggml's `dequantize_row_q8_0`): `count` values from `bytes[offset...]`. */
export function dequantizeQ8_0(bytes: Uint8Array, count: number, offset = 0): Float32Array {
  q8_0ByteLength(count);
  const view = new DataView(bytes.buffer, bytes.byteOffset, bytes.byteLength);
  const out = new Float32Array(count);
  let at = offset;
  for (let block = 0; block < count; block += Q8_0_BLOCK_VALUES) {
    const d = f16BitsToF32(view.getUint16(at, true));
    for (let j = 0; j < Q8_0_BLOCK_VALUES; j++) out[block + j] = view.getInt8(at + 2 + j) * d;
    at += Q8_0_BLOCK_BYTES;
  }
  return out;
}
