/**
 * A benchmark-size llama: random Q8_0 weights at a real small model's shape (width 512, 8 layers,
 * 8 heads / 4 KV heads, FFN 1376: 56M parameters, about 57 MiB) with a real tokenizer copied from
 * another GGUF (by default the 32,000-token Llama 2 vocabulary of llama-2-tiny-random.gguf).
 * Output is gibberish; compute and memory traffic per token are those of a real model of that shape.
 */
import { createHash } from 'node:crypto';
import { readFile } from 'node:fs/promises';
import { gguf, type GGUFValueType, type MetadataValue } from '@huggingface/gguf';
import { kv, writeGgufFile, type GgmlTensorType, type GgufFileSpec, type GgufKv } from './gguf-writer.ts';
import { llamaGgufSpec, llamaShapeOf } from './llama-gguf.ts';

/** The shared test models folder's Llama 2 tokenizer source (read at write time only). */
export const DEFAULT_TOKENIZER_SOURCE = '/work/shared/models/llama-2-tiny-random.gguf';

export interface RealisticLlamaOptions {
  /** Defaults to 512. */
  embeddingLength?: number;
  /** Defaults to 8. */
  blockCount?: number;
  /** Defaults to 8. */
  headCount?: number;
  /** Defaults to 4. */
  headCountKv?: number;
  /** Defaults to 1376. */
  feedForwardLength?: number;
  /** Defaults to 2048. */
  contextLength?: number;
  /** All weight matrices (embedding, layers, output). Defaults to 'Q8_0'. */
  weightType?: GgmlTensorType;
  /** Defaults to 1. */
  seed?: number;
  /** GGUF whose tokenizer.* entries are copied. Defaults to $HEARTH_TOKENIZER_SOURCE or DEFAULT_TOKENIZER_SOURCE. */
  tokenizerSource?: string;
  /** Replaces (or, with null, keeps) the source's tokenizer.chat_template. Defaults to null. */
  chatTemplate?: string | null;
  /** Defaults to 3. */
  logitScale?: number;
}

export const DEFAULT_REALISTIC_LLAMA = {
  embeddingLength: 512,
  blockCount: 8,
  headCount: 8,
  headCountKv: 4,
  feedForwardLength: 1376,
  contextLength: 2048,
  weightType: 'Q8_0',
  seed: 1,
  tokenizerSource: DEFAULT_TOKENIZER_SOURCE,
  chatTemplate: null,
  logitScale: 3,
} as const satisfies Required<RealisticLlamaOptions>;

export function resolveRealisticLlamaOptions(options: RealisticLlamaOptions = {}): Required<RealisticLlamaOptions> {
  const envSource = process.env['HEARTH_TOKENIZER_SOURCE'];
  const resolved: Required<RealisticLlamaOptions> = {
    ...DEFAULT_REALISTIC_LLAMA,
    ...(envSource !== undefined && envSource !== '' ? { tokenizerSource: envSource } : {}),
  };
  for (const [key, value] of Object.entries(options)) {
    if (value !== undefined) (resolved as Record<string, unknown>)[key] = value;
  }
  return resolved;
}

/** Every tokenizer.* entry of a GGUF file, with its stored types, in file order. */
export async function readTokenizerMetadata(path: string): Promise<GgufKv[]> {
  const { typedMetadata } = await gguf(path, { allowLocalFile: true, typedMetadata: true });
  const entries: GgufKv[] = [];
  for (const [key, raw] of Object.entries(typedMetadata)) {
    if (!key.startsWith('tokenizer.') || raw === undefined) continue;
    const entry = raw as { type: GGUFValueType; value: MetadataValue; subType?: GGUFValueType };
    entries.push(
      entry.subType === undefined
        ? { key, type: entry.type, value: entry.value }
        : { key, type: entry.type, subType: entry.subType, value: entry.value },
    );
  }
  if (!entries.some((e) => e.key === 'tokenizer.ggml.tokens')) throw new Error(`${path} has no tokenizer.ggml.tokens`);
  return entries;
}

/** What determines the file's bytes: the resolved options and the tokenizer source's content hash. */
export async function realisticLlamaCacheKey(options: RealisticLlamaOptions = {}): Promise<unknown> {
  const o = resolveRealisticLlamaOptions(options);
  const sourceSha256 = createHash('sha256')
    .update(await readFile(o.tokenizerSource))
    .digest('hex');
  const { tokenizerSource: _path, ...rest } = o;
  return { kind: 'realistic-llama', ...rest, sourceSha256 };
}

export async function realisticLlamaSpec(options: RealisticLlamaOptions = {}): Promise<GgufFileSpec> {
  const o = resolveRealisticLlamaOptions(options);
  let tokenizer = await readTokenizerMetadata(o.tokenizerSource);
  if (o.chatTemplate !== null) {
    tokenizer = [
      ...tokenizer.filter((e) => e.key !== 'tokenizer.chat_template'),
      kv.string('tokenizer.chat_template', o.chatTemplate),
    ];
  }
  return llamaGgufSpec({
    name: 'hearth-realistic-llama',
    shape: llamaShapeOf(o),
    tokenizer,
    embeddingType: o.weightType,
    matrixType: o.weightType,
    outputType: o.weightType,
    seed: o.seed,
    logitScale: o.logitScale,
  });
}

/** Writes the model at `path` (not atomically; see test-model-path.ts). Returns the size in bytes. */
export async function writeRealisticLlama(path: string, options: RealisticLlamaOptions = {}): Promise<number> {
  return writeGgufFile(path, await realisticLlamaSpec(options));
}
