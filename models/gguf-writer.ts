/**
 * A small, deterministic GGUF v3 writer: metadata key/values, tensor infos, alignment padding and
 * tensor data in F32, F16 or Q8_0 (quantized here, bit-exact with ggml's reference code).
 *
 * Format (little endian): "GGUF", u32 version, u64 tensor_count, u64 kv_count, the key/values,
 * the tensor infos (name, n_dims, u64 ne[], u32 ggml type, u64 offset relative to the data section),
 * zero padding to `general.alignment` (default 32), then each tensor's data at its aligned offset.
 *
 * Why not @huggingface/gguf's `serializeGgufMetadata`: it pads right after the key/values, where a file
 * with tensors needs the tensor infos; its output is used in the tests as an independent check of ours.
 *
 * Same spec -> same bytes. Tensor data is streamed (a row generator is called once per row, in order),
 * so a 60 MB model never needs all its floats in memory at once. Runs on whichever thread calls it;
 * `writeGgufFile` yields to the event loop between chunks.
 */
import { open } from 'node:fs/promises';
import { GGUFValueType, type MetadataValue } from '@huggingface/gguf';
import { f32ToF16Bits, q8_0ByteLength, quantizeQ8_0, Q8_0_BLOCK_VALUES } from './ggml-numeric.ts';

export { GGUFValueType };

/** Tensor data types this writer can produce. */
export type GgmlTensorType = 'F32' | 'F16' | 'Q8_0';

/** ggml's `enum ggml_type` ids, as stored in the tensor infos. */
export const GGML_TYPE_ID = { F32: 0, F16: 1, Q8_0: 8 } as const satisfies Record<GgmlTensorType, number>;

/** One metadata entry, in the same shape as @huggingface/gguf's typed metadata (so entries can be copied). */
export interface GgufKv {
  key: string;
  type: GGUFValueType;
  value: MetadataValue;
  /** Item type when `type` is ARRAY. */
  subType?: GGUFValueType;
}

/** Builders for the metadata value types models use. */
export const kv = {
  u32: (key: string, value: number): GgufKv => ({ key, type: GGUFValueType.UINT32, value }),
  i32: (key: string, value: number): GgufKv => ({ key, type: GGUFValueType.INT32, value }),
  f32: (key: string, value: number): GgufKv => ({ key, type: GGUFValueType.FLOAT32, value }),
  bool: (key: string, value: boolean): GgufKv => ({ key, type: GGUFValueType.BOOL, value }),
  string: (key: string, value: string): GgufKv => ({ key, type: GGUFValueType.STRING, value }),
  stringArray: (key: string, value: readonly string[]): GgufKv => ({
    key,
    type: GGUFValueType.ARRAY,
    subType: GGUFValueType.STRING,
    value: [...value],
  }),
  f32Array: (key: string, value: ArrayLike<number>): GgufKv => ({
    key,
    type: GGUFValueType.ARRAY,
    subType: GGUFValueType.FLOAT32,
    value: Array.from(value),
  }),
  i32Array: (key: string, value: ArrayLike<number>): GgufKv => ({
    key,
    type: GGUFValueType.ARRAY,
    subType: GGUFValueType.INT32,
    value: Array.from(value),
  }),
};

/** Fills `row` (length `shape[0]`) with the values of row `rowIndex`; called once per row, in order. */
export type TensorRowGenerator = (row: Float32Array, rowIndex: number) => void;

export interface GgufTensor {
  /** At most 63 UTF-8 bytes (ggml's GGML_MAX_NAME less the NUL). */
  name: string;
  /** ggml order, like `ne[]`: shape[0] is the contiguous row length. 1 to 4 dimensions. */
  shape: readonly number[];
  type: GgmlTensorType;
  /** All values, row after row, or a generator called for each row. */
  values: Float32Array | TensorRowGenerator;
}

export interface GgufFileSpec {
  /** Written in this order. `general.alignment` (u32), when present, sets the alignment; defaults to 32. */
  metadata: readonly GgufKv[];
  /** Data is laid out in this order. */
  tensors: readonly GgufTensor[];
}

export const GGUF_VERSION = 3;
export const GGUF_DEFAULT_ALIGNMENT = 32;
const GGML_MAX_NAME_BYTES = 63;
/** Target size of the data chunks `ggufChunks` yields. */
const DATA_CHUNK_BYTES = 1 << 20;

/** Bytes a tensor's data occupies (without alignment padding). */
export function tensorByteLength(type: GgmlTensorType, elementCount: number): number {
  switch (type) {
    case 'F32':
      return elementCount * 4;
    case 'F16':
      return elementCount * 2;
    case 'Q8_0':
      return q8_0ByteLength(elementCount);
  }
}

export function elementCount(shape: readonly number[]): number {
  return shape.reduce((a, b) => a * b, 1);
}

function alignUp(n: number, alignment: number): number {
  return Math.ceil(n / alignment) * alignment;
}

/** How one fixed-size value is written: its size in bytes, and the DataView setter at an offset (little-endian). */
interface FixedWidth {
  size: number;
  set: (view: DataView, at: number, v: number | bigint) => void;
}

/** The GGUF value types of a fixed size: all but BOOL (written as a UINT8), STRING and ARRAY. */
const FIXED_WIDTH = {
  [GGUFValueType.UINT8]: { size: 1, set: (d, at, v) => d.setUint8(at, Number(v)) },
  [GGUFValueType.INT8]: { size: 1, set: (d, at, v) => d.setInt8(at, Number(v)) },
  [GGUFValueType.UINT16]: { size: 2, set: (d, at, v) => d.setUint16(at, Number(v), true) },
  [GGUFValueType.INT16]: { size: 2, set: (d, at, v) => d.setInt16(at, Number(v), true) },
  [GGUFValueType.UINT32]: { size: 4, set: (d, at, v) => d.setUint32(at, Number(v), true) },
  [GGUFValueType.INT32]: { size: 4, set: (d, at, v) => d.setInt32(at, Number(v), true) },
  [GGUFValueType.FLOAT32]: { size: 4, set: (d, at, v) => d.setFloat32(at, Number(v), true) },
  [GGUFValueType.FLOAT64]: { size: 8, set: (d, at, v) => d.setFloat64(at, Number(v), true) },
  [GGUFValueType.UINT64]: { size: 8, set: (d, at, v) => d.setBigUint64(at, BigInt(v), true) },
  [GGUFValueType.INT64]: { size: 8, set: (d, at, v) => d.setBigInt64(at, BigInt(v), true) },
} satisfies Record<number, FixedWidth>;

type FixedType = keyof typeof FIXED_WIDTH;

function isFixed(type: GGUFValueType): type is FixedType {
  return type in FIXED_WIDTH;
}

/** A growable little-endian byte buffer for the header. */
class ByteSink {
  #bytes = new Uint8Array(1 << 16);
  #view = new DataView(this.#bytes.buffer);
  length = 0;
  static readonly #encoder = new TextEncoder();

  #reserve(n: number): void {
    if (this.length + n <= this.#bytes.length) return;
    let size = this.#bytes.length * 2;
    while (size < this.length + n) size *= 2;
    const bigger = new Uint8Array(size);
    bigger.set(this.#bytes.subarray(0, this.length));
    this.#bytes = bigger;
    this.#view = new DataView(bigger.buffer);
  }
  /** Appends `v` as the fixed-size GGUF type `type`. */
  fixed(type: FixedType, v: number | bigint): void {
    const { size, set } = FIXED_WIDTH[type];
    this.#reserve(size);
    set(this.#view, this.length, v);
    this.length += size;
  }
  u32(v: number): void {
    this.fixed(GGUFValueType.UINT32, v);
  }
  u64(v: number | bigint): void {
    this.fixed(GGUFValueType.UINT64, v);
  }
  bytes(b: Uint8Array): void {
    this.#reserve(b.length);
    this.#bytes.set(b, this.length);
    this.length += b.length;
  }
  string(s: string): void {
    const b = ByteSink.#encoder.encode(s);
    this.u64(b.length);
    this.bytes(b);
  }
  padTo(alignment: number): void {
    const n = alignUp(this.length, alignment) - this.length;
    this.#reserve(n);
    this.length += n;
  }
  result(): Uint8Array {
    return this.#bytes.slice(0, this.length);
  }
}

function writeScalar(sink: ByteSink, type: GGUFValueType, value: MetadataValue, key: string): void {
  const num = (): number => {
    if (typeof value === 'number') return value;
    if (typeof value === 'bigint') return Number(value);
    throw new TypeError(`GGUF key ${key}: expected a number, got ${typeof value}`);
  };
  if (isFixed(type)) {
    sink.fixed(type, typeof value === 'bigint' ? value : num());
    return;
  }
  switch (type) {
    case GGUFValueType.BOOL:
      if (typeof value !== 'boolean') throw new TypeError(`GGUF key ${key}: expected a boolean`);
      sink.fixed(GGUFValueType.UINT8, value ? 1 : 0);
      return;
    case GGUFValueType.STRING:
      if (typeof value !== 'string') throw new TypeError(`GGUF key ${key}: expected a string`);
      sink.string(value);
      return;
    default:
      throw new TypeError(`GGUF key ${key}: unsupported scalar type ${type}`);
  }
}

function writeKv(sink: ByteSink, entry: GgufKv): void {
  sink.string(entry.key);
  sink.u32(entry.type);
  if (entry.type !== GGUFValueType.ARRAY) {
    writeScalar(sink, entry.type, entry.value, entry.key);
    return;
  }
  if (!Array.isArray(entry.value)) throw new TypeError(`GGUF key ${entry.key}: expected an array`);
  const itemType = entry.subType;
  if (itemType === undefined || itemType === GGUFValueType.ARRAY) {
    throw new TypeError(`GGUF key ${entry.key}: arrays need a scalar subType`);
  }
  sink.u32(itemType);
  sink.u64(entry.value.length);
  for (const item of entry.value) writeScalar(sink, itemType, item as MetadataValue, entry.key);
}

/** Where each tensor's data goes; computed once from the spec. */
export interface GgufLayout {
  alignment: number;
  /** Header + key/values + tensor infos + padding: where the data section starts. */
  header: Uint8Array;
  /** Per tensor, the offset relative to the data section. */
  offsets: number[];
  /** Total file size. */
  fileBytes: number;
}

function resolveAlignment(metadata: readonly GgufKv[]): number {
  const entry = metadata.find((e) => e.key === 'general.alignment');
  if (entry === undefined) return GGUF_DEFAULT_ALIGNMENT;
  const value = Number(entry.value);
  if (entry.type !== GGUFValueType.UINT32 || !Number.isInteger(value) || value <= 0 || value % 8 !== 0) {
    throw new RangeError('general.alignment must be a u32, a positive multiple of 8');
  }
  return value;
}

function validate(spec: GgufFileSpec): void {
  const keys = new Set<string>();
  for (const entry of spec.metadata) {
    if (keys.has(entry.key)) throw new Error(`duplicate GGUF key ${entry.key}`);
    keys.add(entry.key);
  }
  const names = new Set<string>();
  for (const t of spec.tensors) {
    if (names.has(t.name)) throw new Error(`duplicate tensor ${t.name}`);
    names.add(t.name);
    if (Buffer.byteLength(t.name) > GGML_MAX_NAME_BYTES) throw new Error(`tensor name too long: ${t.name}`);
    if (t.shape.length < 1 || t.shape.length > 4 || t.shape.some((d) => !Number.isInteger(d) || d < 1)) {
      throw new RangeError(`tensor ${t.name}: shape must be 1 to 4 positive integers`);
    }
    if (t.type === 'Q8_0' && t.shape[0]! % Q8_0_BLOCK_VALUES !== 0) {
      throw new RangeError(`tensor ${t.name}: Q8_0 rows must be a multiple of ${Q8_0_BLOCK_VALUES} long`);
    }
    if (t.values instanceof Float32Array && t.values.length !== elementCount(t.shape)) {
      throw new RangeError(`tensor ${t.name}: ${t.values.length} values for shape [${t.shape.join(', ')}]`);
    }
  }
}

/** Validates the spec and lays the file out. */
export function layoutGguf(spec: GgufFileSpec): GgufLayout {
  validate(spec);
  const alignment = resolveAlignment(spec.metadata);
  const sink = new ByteSink();
  sink.bytes(new Uint8Array([0x47, 0x47, 0x55, 0x46])); // "GGUF"
  sink.u32(GGUF_VERSION);
  sink.u64(spec.tensors.length);
  sink.u64(spec.metadata.length);
  for (const entry of spec.metadata) writeKv(sink, entry);
  const offsets: number[] = [];
  let dataBytes = 0;
  for (const t of spec.tensors) {
    dataBytes = alignUp(dataBytes, alignment);
    offsets.push(dataBytes);
    sink.string(t.name);
    sink.u32(t.shape.length);
    for (const d of t.shape) sink.u64(d);
    sink.u32(GGML_TYPE_ID[t.type]);
    sink.u64(dataBytes);
    dataBytes += tensorByteLength(t.type, elementCount(t.shape));
  }
  sink.padTo(alignment);
  const header = sink.result();
  return { alignment, header, offsets, fileBytes: header.length + dataBytes };
}

/** Encodes `count` values of one type into `out` at `at`; returns the bytes written. */
function encodeValues(type: GgmlTensorType, values: Float32Array, out: Uint8Array, at: number): number {
  switch (type) {
    case 'F32': {
      const view = new DataView(out.buffer, out.byteOffset + at, values.length * 4);
      for (let i = 0; i < values.length; i++) view.setFloat32(i * 4, values[i]!, true);
      return values.length * 4;
    }
    case 'F16': {
      const view = new DataView(out.buffer, out.byteOffset + at, values.length * 2);
      for (let i = 0; i < values.length; i++) view.setUint16(i * 2, f32ToF16Bits(values[i]!), true);
      return values.length * 2;
    }
    case 'Q8_0':
      return quantizeQ8_0(values, out, at);
  }
}

/**
 * The file as a sequence of chunks (header first, then ~1 MiB data chunks, padding included).
 * Chunks are fresh buffers the consumer owns.
 */
export function* ggufChunks(spec: GgufFileSpec, layout: GgufLayout = layoutGguf(spec)): Generator<Uint8Array> {
  yield layout.header;
  let written = 0; // bytes of the data section emitted so far
  for (let i = 0; i < spec.tensors.length; i++) {
    const t = spec.tensors[i]!;
    const rowLength = t.shape[0]!;
    const rows = elementCount(t.shape) / rowLength;
    const rowBytes = tensorByteLength(t.type, rowLength);
    const rowsPerChunk = Math.max(1, Math.floor(DATA_CHUNK_BYTES / rowBytes));
    const padding = layout.offsets[i]! - written;
    const row = new Float32Array(rowLength);
    for (let first = 0; first < rows; first += rowsPerChunk) {
      const count = Math.min(rowsPerChunk, rows - first);
      const lead = first === 0 ? padding : 0;
      const chunk = new Uint8Array(lead + count * rowBytes); // zero-filled: the padding
      let at = lead;
      for (let r = first; r < first + count; r++) {
        if (t.values instanceof Float32Array) {
          at += encodeValues(t.type, t.values.subarray(r * rowLength, (r + 1) * rowLength), chunk, at);
        } else {
          row.fill(0);
          t.values(row, r);
          at += encodeValues(t.type, row, chunk, at);
        }
      }
      written += chunk.length;
      yield chunk;
    }
  }
  if (layout.header.length + written !== layout.fileBytes) {
    throw new Error(`GGUF writer bug: wrote ${layout.header.length + written} of ${layout.fileBytes} bytes`);
  }
}

/** The whole file in memory (for small models and tests). */
export function encodeGguf(spec: GgufFileSpec): Uint8Array {
  const layout = layoutGguf(spec);
  const out = new Uint8Array(layout.fileBytes);
  let at = 0;
  for (const chunk of ggufChunks(spec, layout)) {
    out.set(chunk, at);
    at += chunk.length;
  }
  return out;
}

/**
 * Writes the file at `path` (created or truncated; not atomic: see model-cache.ts for that).
 * Returns the file size in bytes.
 */
export async function writeGgufFile(path: string, spec: GgufFileSpec): Promise<number> {
  const layout = layoutGguf(spec);
  const file = await open(path, 'w');
  try {
    for (const chunk of ggufChunks(spec, layout)) await file.write(chunk);
  } finally {
    await file.close();
  }
  return layout.fileBytes;
}
