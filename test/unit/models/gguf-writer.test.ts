import { createHash } from 'node:crypto';
import { existsSync } from 'node:fs';
import { mkdtemp, readFile, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { gguf, serializeGgufMetadata, type GGUFTypedMetadata } from '@huggingface/gguf';
import { dequantizeQ8_0, f16BitsToF32 } from '../../../models/ggml-numeric.ts';
import {
  encodeGguf,
  GGUFValueType,
  kv,
  layoutGguf,
  writeGgufFile,
  type GgufFileSpec,
  type GgufKv,
} from '../../../models/gguf-writer.ts';
import { llamaParameterCount } from '../../../models/llama-gguf.ts';
import { DEFAULT_TOKENIZER_SOURCE, realisticLlamaSpec } from '../../../models/realistic-llama.ts';
import { DEFAULT_TINY_REPLY, tinyLlamaSpec, writeTinyLlama } from '../../../models/tiny-llama.ts';
import { buildTinyVocabulary, isFormable, scriptPieces, SPM_SPACE, TOKEN_TYPE } from '../../../models/tiny-vocab.ts';
import { CHATML_TEMPLATE } from '../../../models/chat-templates.ts';

let dir: string;
beforeAll(async () => {
  dir = await mkdtemp(join(tmpdir(), 'hearth-gguf-writer-'));
});
afterAll(async () => {
  await rm(dir, { recursive: true, force: true });
});

const sha256 = (bytes: Uint8Array): string => createHash('sha256').update(bytes).digest('hex');

async function parse(path: string) {
  return gguf(path, { allowLocalFile: true, typedMetadata: true });
}

const ALL_KINDS: GgufKv[] = [
  kv.string('general.architecture', 'llama'),
  kv.u32('general.alignment', 32),
  { key: 'test.u8', type: GGUFValueType.UINT8, value: 200 },
  { key: 'test.i8', type: GGUFValueType.INT8, value: -100 },
  { key: 'test.u16', type: GGUFValueType.UINT16, value: 60000 },
  { key: 'test.i16', type: GGUFValueType.INT16, value: -30000 },
  kv.u32('test.u32', 4_000_000_000),
  kv.i32('test.i32', -2_000_000_000),
  kv.f32('test.f32', 0.25),
  { key: 'test.f64', type: GGUFValueType.FLOAT64, value: Math.PI },
  { key: 'test.u64', type: GGUFValueType.UINT64, value: 2n ** 40n + 3n },
  { key: 'test.i64', type: GGUFValueType.INT64, value: -(2n ** 40n) },
  kv.bool('test.true', true),
  kv.bool('test.false', false),
  kv.string('test.unicode', 'héllo ▁ 日本 🙂'),
  kv.stringArray('test.strings', ['<unk>', '', '▁the']),
  kv.f32Array('test.floats', [0, -1.5, 1e-3]),
  kv.i32Array('test.ints', [1, -2, 6]),
];

const f32Values = Float32Array.from({ length: 16 }, (_, i) => i * 0.5 - 3);
const q8Values = Float32Array.from({ length: 96 }, (_, i) => Math.sin(i) * (i % 32 === 0 ? 4 : 1));
const SMALL_SPEC: GgufFileSpec = {
  metadata: ALL_KINDS,
  tensors: [
    { name: 'a.f32', shape: [8, 2], type: 'F32', values: f32Values },
    { name: 'b.f16', shape: [5], type: 'F16', values: Float32Array.from([1, -2, 0.5, 65504, 1 / 3]) },
    {
      name: 'c.q8_0',
      shape: [32, 3],
      type: 'Q8_0',
      values: (row, r) => row.set(q8Values.subarray(r * 32, r * 32 + 32)),
    },
  ],
};

describe('writeGgufFile: parse-back with @huggingface/gguf', () => {
  it('writes every metadata type so the parser reads back the same values and types', async () => {
    const path = join(dir, 'small.gguf');
    const size = await writeGgufFile(path, SMALL_SPEC);
    const parsed = await parse(path);
    expect(parsed.metadata.version).toBe(3);
    expect(parsed.metadata.tensor_count).toBe(3n);
    expect(parsed.metadata.kv_count).toBe(BigInt(ALL_KINDS.length));
    for (const entry of ALL_KINDS) {
      const got = parsed.typedMetadata[entry.key];
      expect(got?.type, entry.key).toBe(entry.type);
      if (entry.type === GGUFValueType.ARRAY) expect(got?.subType, entry.key).toBe(entry.subType);
      if (entry.type === GGUFValueType.FLOAT32 || entry.subType === GGUFValueType.FLOAT32) {
        const expected = [entry.value].flat().map((v) => Math.fround(Number(v)));
        expect([got?.value].flat(), entry.key).toEqual(expected);
      } else {
        expect(got?.value, entry.key).toEqual(entry.value);
      }
    }
    expect(size).toBe((await readFile(path)).length);
  });

  it('writes tensor infos with aligned offsets and data that decodes back', async () => {
    const path = join(dir, 'small-data.gguf');
    await writeGgufFile(path, SMALL_SPEC);
    const parsed = await parse(path);
    const bytes = new Uint8Array(await readFile(path));
    expect(parsed.tensorInfos.map((t) => [t.name, t.shape, Number(t.dtype)])).toEqual([
      ['a.f32', [8n, 2n], 0],
      ['b.f16', [5n], 1],
      ['c.q8_0', [32n, 3n], 8],
    ]);
    expect(Number(parsed.tensorDataOffset) % 32).toBe(0);
    expect(parsed.tensorInfos.map((t) => Number(t.offset))).toEqual([0, 64, 96]); // b is 10 bytes, padded to 32
    expect(bytes.length).toBe(Number(parsed.tensorDataOffset) + 96 + 3 * 34);

    const base = Number(parsed.tensorDataOffset);
    const view = new DataView(bytes.buffer, bytes.byteOffset);
    const f32 = Array.from({ length: 16 }, (_, i) => view.getFloat32(base + i * 4, true));
    expect(f32).toEqual([...f32Values]);
    const f16 = Array.from({ length: 5 }, (_, i) => f16BitsToF32(view.getUint16(base + 64 + i * 2, true)));
    expect(f16.slice(0, 4)).toEqual([1, -2, 0.5, 65504]);
    expect(f16[4]).toBeCloseTo(1 / 3, 3);
    expect([...bytes.subarray(base + 74, base + 96)]).toEqual(new Array(22).fill(0)); // padding
    const q8 = dequantizeQ8_0(bytes, 96, base + 96);
    for (let i = 0; i < 96; i++) expect(Math.abs(q8[i]! - q8Values[i]!)).toBeLessThan(0.02);
  });

  it('serializes key/values byte-identically to @huggingface/gguf serializeGgufMetadata', async () => {
    const ours = encodeGguf(SMALL_SPEC);
    const path = join(dir, 'small-cmp.gguf');
    await writeFile(path, ours);
    const { tensorInfoByteRange } = await parse(path);
    const typed: Record<string, unknown> = {
      version: { value: 3, type: GGUFValueType.UINT32 },
      tensor_count: { value: 3n, type: GGUFValueType.UINT64 },
      kv_count: { value: BigInt(ALL_KINDS.length), type: GGUFValueType.UINT64 },
    };
    for (const e of ALL_KINDS) typed[e.key] = { value: e.value, type: e.type, subType: e.subType };
    const theirs = serializeGgufMetadata(typed as GGUFTypedMetadata);
    const kvEnd = tensorInfoByteRange[0];
    expect(sha256(ours.subarray(0, kvEnd))).toBe(sha256(theirs.subarray(0, kvEnd)));
  });

  it('rejects specs llama.cpp could not load', () => {
    const base = { metadata: [], tensors: [] } satisfies GgufFileSpec;
    expect(() =>
      layoutGguf({ ...base, tensors: [{ name: 'x', shape: [48], type: 'Q8_0', values: new Float32Array(48) }] }),
    ).toThrow(/multiple of 32/);
    expect(() =>
      layoutGguf({ ...base, tensors: [{ name: 'x', shape: [4], type: 'F32', values: new Float32Array(5) }] }),
    ).toThrow(/5 values/);
    const t = { name: 'x', shape: [4], type: 'F32', values: new Float32Array(4) } as const;
    expect(() => layoutGguf({ ...base, tensors: [t, t] })).toThrow(/duplicate tensor/);
    expect(() => layoutGguf({ ...base, tensors: [{ ...t, name: 'n'.repeat(64) }] })).toThrow(/too long/);
    expect(() => layoutGguf({ metadata: [kv.u32('a', 1), kv.u32('a', 2)], tensors: [] })).toThrow(/duplicate GGUF key/);
  });
});

describe('determinism', () => {
  it('same options -> same bytes; another seed -> other bytes', async () => {
    const spec = tinyLlamaSpec();
    const first = encodeGguf(spec);
    expect(sha256(encodeGguf(spec))).toBe(sha256(first)); // same spec object, encoded again
    expect(sha256(encodeGguf(tinyLlamaSpec()))).toBe(sha256(first));
    const a = join(dir, 'tiny-a.gguf');
    const b = join(dir, 'tiny-b.gguf');
    await writeTinyLlama(a);
    await writeTinyLlama(b);
    expect(sha256(await readFile(b))).toBe(sha256(await readFile(a)));
    expect(sha256(await readFile(a))).toBe(sha256(first));
    expect(sha256(encodeGguf(tinyLlamaSpec({ seed: 2 })))).not.toBe(sha256(first));
  });
});

describe('tiny llama file', () => {
  it('has llama metadata, a consistent vocabulary and the three tensor types, in well under 1 MB', async () => {
    const path = join(dir, 'tiny.gguf');
    const size = await writeTinyLlama(path);
    expect(size).toBeLessThan(700_000);
    const { metadata, typedMetadata, tensorInfos } = await parse(path);
    const m = metadata as unknown as Record<string, unknown>;
    expect(m['general.architecture']).toBe('llama');
    expect(m['general.alignment']).toBe(32);
    expect(m['llama.block_count']).toBe(2);
    expect(m['llama.embedding_length']).toBe(64);
    expect(m['llama.attention.head_count']).toBe(4);
    expect(m['llama.attention.head_count_kv']).toBe(2);
    expect(m['llama.feed_forward_length']).toBe(128);
    expect(m['llama.context_length']).toBe(2048);
    expect(m['llama.rope.dimension_count']).toBe(16);
    expect(m['tokenizer.ggml.model']).toBe('llama');
    expect(m['tokenizer.ggml.bos_token_id']).toBe(1);
    expect(m['tokenizer.ggml.eos_token_id']).toBe(2);
    expect(m['tokenizer.chat_template']).toBeUndefined();
    expect(typedMetadata['tokenizer.ggml.token_type']?.subType).toBe(GGUFValueType.INT32);
    const tokens = m['tokenizer.ggml.tokens'] as string[];
    expect(m['llama.vocab_size']).toBe(tokens.length);

    const byName = new Map(tensorInfos.map((t) => [t.name, t]));
    expect(tensorInfos).toHaveLength(3 + 2 * 9);
    expect(byName.get('token_embd.weight')?.shape).toEqual([64n, BigInt(tokens.length)]);
    expect(Number(byName.get('token_embd.weight')?.dtype)).toBe(8);
    expect(Number(byName.get('blk.1.attn_k.weight')?.dtype)).toBe(1);
    expect(byName.get('blk.1.attn_k.weight')?.shape).toEqual([64n, 32n]);
    expect(byName.get('blk.0.ffn_down.weight')?.shape).toEqual([128n, 64n]);
    expect(Number(byName.get('blk.0.attn_norm.weight')?.dtype)).toBe(0);
  });

  it('embeds the chat template only when asked', async () => {
    const path = join(dir, 'tiny-chat.gguf');
    await writeTinyLlama(path, { chatTemplate: CHATML_TEMPLATE });
    const { metadata } = await parse(path);
    expect((metadata as unknown as Record<string, unknown>)['tokenizer.chat_template']).toBe(CHATML_TEMPLATE);
  });

  it('vocabulary: unique pieces, all 256 byte tokens, every piece reachable by SPM merges', () => {
    const { tokens, tokenTypes, scores } = buildTinyVocabulary();
    expect(new Set(tokens).size).toBe(tokens.length);
    expect(tokens.slice(0, 3)).toEqual(['<unk>', '<s>', '</s>']);
    expect(tokens[3 + 0x0a]).toBe('<0x0A>');
    expect([...tokenTypes.subarray(3, 259)].every((t) => t === TOKEN_TYPE.byte)).toBe(true);
    expect(tokens.length).toBeGreaterThan(1000);
    const set = new Set(tokens);
    for (let i = 0; i < tokens.length; i++) {
      if (tokenTypes[i] !== TOKEN_TYPE.normal) continue;
      const chars = [...tokens[i]!];
      const first = chars[0] === SPM_SPACE ? 2 : 1;
      for (let end = first; end < chars.length; end++) expect(set.has(chars.slice(0, end).join(''))).toBe(true);
      expect(Number.isFinite(scores[i])).toBe(true);
    }
    expect(set.has(`${SPM_SPACE}the`) && set.has(`${SPM_SPACE}Hello`)).toBe(true);
  });
});

describe('scripted reply pieces', () => {
  it('cuts the reply into pieces SPM cannot form from text, which spell the reply exactly', () => {
    const base = buildTinyVocabulary();
    const pieces = scriptPieces(base, DEFAULT_TINY_REPLY);
    expect(pieces.join('').replaceAll(SPM_SPACE, ' ')).toBe(DEFAULT_TINY_REPLY);
    expect(pieces.length).toBeGreaterThanOrEqual(3);
    const vocabulary = new Set([...base.tokens, ...pieces]);
    for (const piece of pieces) expect(isFormable(piece, vocabulary)).toBe(false);
    expect(isFormable(`${SPM_SPACE}the`, vocabulary)).toBe(true);
    expect(() => scriptPieces(base, 'Hi')).toThrow(/too short/);
  });

  it('adds the pieces to the vocabulary of the written model', async () => {
    const { metadata } = await parse(
      await (async () => {
        const path = join(dir, 'tiny-reply.gguf');
        await writeTinyLlama(path, { reply: 'Sure, here it is.' });
        return path;
      })(),
    );
    const tokens = (metadata as unknown as Record<string, unknown>)['tokenizer.ggml.tokens'] as string[];
    expect(tokens.slice(-2)).toEqual([`Sure,${SPM_SPACE}here`, `${SPM_SPACE}it${SPM_SPACE}is.`]);
  });
});

describe.skipIf(!existsSync(DEFAULT_TOKENIZER_SOURCE))('realistic llama spec (needs /work/shared/models)', () => {
  it('copies the Llama 2 tokenizer and lays out ~56M Q8_0 parameters in ~57 MiB', async () => {
    const spec = await realisticLlamaSpec();
    const source = await parse(DEFAULT_TOKENIZER_SOURCE);
    const keys = Object.keys(source.typedMetadata).filter((k) => k.startsWith('tokenizer.'));
    for (const key of keys) {
      const entry = spec.metadata.find((e) => e.key === key);
      expect(entry?.type, key).toBe(source.typedMetadata[key]?.type);
      expect(entry?.value, key).toEqual(source.typedMetadata[key]?.value);
    }
    const params = llamaParameterCount(
      {
        contextLength: 2048,
        embeddingLength: 512,
        blockCount: 8,
        feedForwardLength: 1376,
        headCount: 8,
        headCountKv: 4,
      },
      32000,
    );
    expect(params).toBeGreaterThan(55e6);
    expect(params).toBeLessThan(57e6);
    const elements = spec.tensors.reduce((n, t) => n + t.shape.reduce((a, b) => a * b, 1), 0);
    expect(elements).toBe(params);
    const { fileBytes } = layoutGguf(spec);
    expect(fileBytes / 2 ** 20).toBeGreaterThan(56);
    expect(fileBytes / 2 ** 20).toBeLessThan(59);
  });
});
