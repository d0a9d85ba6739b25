/**
 * Paths of the project's generated models, written on first use and reused afterwards:
 * - `ensureTinyModel()`: the tiny llama for tests (os tmpdir/hearth-test-models, or $HEARTH_TEST_MODELS_DIR);
 * - `ensureTinyChatModel()`: the same with the ChatML template embedded;
 * - `ensureTinyBert()`: a tiny BERT embedding model (encoder only; mean or cls pooling), same directory;
 * - `ensureRealisticModel()`: the 56M-parameter Q8_0 llama for benchmarks ($HEARTH_CACHE_DIR or ~/.cache/hearth/models).
 * File names carry a hash of the resolved options (and of the tokenizer source file's bytes), so a
 * different option set never reuses a stale file. Safe to call from parallel test files.
 */
import { join } from 'node:path';
import { CHATML_TEMPLATE } from './chat-templates.ts';
import { defaultModelCacheDir, defaultTestModelDir, ensureGeneratedFile, optionsHash } from './model-cache.ts';
import { resolveTinyLlamaOptions, writeTinyLlama, type TinyLlamaOptions } from './tiny-llama.ts';
import { resolveTinyBertOptions, writeTinyBert, type TinyBertOptions } from './tiny-bert.ts';
import { realisticLlamaCacheKey, writeRealisticLlama, type RealisticLlamaOptions } from './realistic-llama.ts';

export function ensureTinyModel(options: TinyLlamaOptions = {}, dir: string = defaultTestModelDir()): Promise<string> {
  const resolved = resolveTinyLlamaOptions(options);
  const kind = resolved.chatTemplate === null ? 'tiny-llama' : 'tiny-llama-chat';
  const path = join(dir, `${kind}-${optionsHash(resolved)}.gguf`);
  return ensureGeneratedFile(path, (temporary) => writeTinyLlama(temporary, resolved));
}

/** The tiny llama with tokenizer.chat_template = CHATML_TEMPLATE. */
export function ensureTinyChatModel(options: TinyLlamaOptions = {}, dir?: string): Promise<string> {
  return ensureTinyModel({ chatTemplate: CHATML_TEMPLATE, ...options }, dir);
}

export async function ensureRealisticModel(
  options: RealisticLlamaOptions = {},
  dir: string = defaultModelCacheDir(),
): Promise<string> {
  const key = await realisticLlamaCacheKey(options);
  const path = join(dir, `realistic-llama-${optionsHash(key)}.gguf`);
  return ensureGeneratedFile(path, (temporary) => writeRealisticLlama(temporary, options));
}

export function ensureTinyBert(options: TinyBertOptions = {}, dir: string = defaultTestModelDir()): Promise<string> {
  const resolved = resolveTinyBertOptions(options);
  const path = join(dir, `tiny-bert-${optionsHash(resolved)}.gguf`);
  return ensureGeneratedFile(path, (temporary) => writeTinyBert(temporary, resolved));
}
