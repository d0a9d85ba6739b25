import fs from 'node:fs';
import path from 'node:path';
import { ensureTinyBert, ensureTinyChatModel, ensureTinyModel } from '../../models/test-model-path.ts';
import type { TinyBertOptions } from '../../models/tiny-bert.ts';

/** The project's own tiny llama (written on first use; no download). */
export const tinyModel = (): Promise<string> => ensureTinyModel();
export const tinyChatModel = (): Promise<string> => ensureTinyChatModel();
/** The project's own tiny BERT embedding model (encoder only), with the pooling its GGUF declares. */
export const tinyBertModel = (options: TinyBertOptions = {}): Promise<string> => ensureTinyBert(options);

/**
 * A real trained GGUF for "real text comes out" checks: $HEARTH_TEST_MODEL, else ../shared/models/stories260K.gguf
 * when present; undefined where neither exists (those tests skip, saying so).
 */
export function realTestModel(): string | undefined {
  const fromEnv = process.env.HEARTH_TEST_MODEL;
  if (fromEnv && fs.existsSync(fromEnv)) return path.resolve(fromEnv);
  const shared = path.resolve(import.meta.dirname, '../../../shared/models/stories260K.gguf');
  return fs.existsSync(shared) ? shared : undefined;
}
