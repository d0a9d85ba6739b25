import fs from 'node:fs';
import { GGMLFileQuantizationType, gguf } from '@huggingface/gguf';

/** What Hearth knows about a GGUF before loading it (read with @huggingface/gguf, header only). */
export interface ModelMetadata {
  architecture: string;
  /** Context length the model was trained with. */
  contextLength: number | null;
  parameterCount: number;
  quantization: string | null;
  chatTemplate: string | null;
  name: string | null;
  fileBytes: number;
  /** UTF-8 bytes of the vocabulary's longest piece (as stored), the most text one token can cover; null without a vocabulary. */
  maxTokenBytes: number | null;
  /** Bytes of KV cache one token takes at f16 (K and V of every layer's KV heads); null when the header does not say. */
  kvBytesPerToken: number | null;
}

export class InvalidModelFileError extends Error {
  override name = 'InvalidModelFileError';
}

function fileTypeName(t: unknown): string | null {
  if (typeof t !== 'number') return null;
  const name = (GGMLFileQuantizationType as unknown as Record<number, string>)[t];
  return name ?? `type_${t}`;
}

/** Reads and checks a GGUF's metadata; a missing or non-GGUF file is an InvalidModelFileError naming it. */
export async function readModelMetadata(filePath: string): Promise<ModelMetadata> {
  let stat: fs.Stats;
  try {
    stat = fs.statSync(filePath);
  } catch {
    throw new InvalidModelFileError(`model file not found: ${filePath}`);
  }
  if (!stat.isFile()) throw new InvalidModelFileError(`model path is not a file: ${filePath}`);
  const fd = fs.openSync(filePath, 'r');
  const magic = Buffer.alloc(4);
  fs.readSync(fd, magic, 0, 4, 0);
  fs.closeSync(fd);
  if (magic.toString('latin1') !== 'GGUF') throw new InvalidModelFileError(`not a GGUF file (bad magic): ${filePath}`);
  let parsed: Awaited<ReturnType<typeof gguf>> & { parameterCount: number };
  try {
    parsed = await gguf(filePath, { allowLocalFile: true, computeParametersCount: true });
  } catch (err) {
    throw new InvalidModelFileError(
      `not a valid GGUF file: ${filePath} (${err instanceof Error ? err.message : String(err)})`,
    );
  }
  const md = parsed.metadata as Record<string, unknown>;
  const architecture =
    typeof md['general.architecture'] === 'string' ? (md['general.architecture'] as string) : 'unknown';
  const ctx = md[`${architecture}.context_length`];
  return {
    architecture,
    contextLength: typeof ctx === 'number' ? ctx : typeof ctx === 'bigint' ? Number(ctx) : null,
    parameterCount: parsed.parameterCount,
    quantization: fileTypeName(md['general.file_type']),
    chatTemplate: typeof md['tokenizer.chat_template'] === 'string' ? (md['tokenizer.chat_template'] as string) : null,
    name: typeof md['general.name'] === 'string' ? (md['general.name'] as string) : null,
    fileBytes: stat.size,
    maxTokenBytes: longestPieceBytes(md['tokenizer.ggml.tokens']),
    kvBytesPerToken: kvBytesPerToken(md, architecture),
  };
}

/** 2 (K and V) x layers x KV heads x head size x 2 bytes (f16, llama.cpp's default cache type). */
function kvBytesPerToken(md: Record<string, unknown>, arch: string): number | null {
  const num = (k: string): number | null => {
    const v = md[`${arch}.${k}`];
    return typeof v === 'number' ? v : typeof v === 'bigint' ? Number(v) : null;
  };
  const layers = num('block_count');
  const heads = num('attention.head_count');
  const kvHeads = num('attention.head_count_kv') ?? heads;
  const width = num('embedding_length');
  const keySize = num('attention.key_length') ?? (width !== null && heads ? width / heads : null);
  const valueSize = num('attention.value_length') ?? keySize;
  if (!layers || !kvHeads || !keySize || !valueSize) return null;
  return layers * kvHeads * (keySize + valueSize) * 2;
}

function longestPieceBytes(tokens: unknown): number | null {
  if (!Array.isArray(tokens) || tokens.length === 0) return null;
  let max = 0;
  for (const t of tokens) if (typeof t === 'string') max = Math.max(max, Buffer.byteLength(t));
  return max > 0 ? max : null;
}
