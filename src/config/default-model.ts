/**
 * The service's default model: what `hearth serve` pulls on first start when no --model is given,
 * and where pulled models are kept.
 *
 * Rationale: Qwen2.5-0.5B-Instruct is the smallest widely used instruction-tuned chat model with a
 * permissive licence (Apache 2.0), a 32K context, a ChatML template embedded in its GGUF, and good
 * llama.cpp support; at Q4_K_M it is about 400 MB, so it downloads in minutes and answers at useful
 * speed on a small CPU-only host. The file is bartowski's quantization (a long-standing, widely mirrored
 * GGUF publisher; the same file config-spec.ts names); Qwen's own repo holds an equivalent
 * `hf:Qwen/Qwen2.5-0.5B-Instruct-GGUF/qwen2.5-0.5b-instruct-q4_k_m.gguf`. SmolLM2-360M-Instruct would be
 * smaller but follows instructions noticeably worse.
 */
import { homedir } from 'node:os';
import { join } from 'node:path';

export interface ModelManifestEntry {
  /** node-llama-cpp model URI: `hf:<user>/<repo>/<file>`. */
  uri: string;
  /** Human description for logs and `hearth models`. */
  description: string;
  /** Approximate download size in bytes (for progress messages; not verified). */
  approximateBytes: number;
  license: string;
}

export const DEFAULT_MODEL = {
  uri: 'hf:bartowski/Qwen2.5-0.5B-Instruct-GGUF/Qwen2.5-0.5B-Instruct-Q4_K_M.gguf',
  description: 'Qwen2.5 0.5B Instruct, Q4_K_M (ChatML template, 32K context)',
  approximateBytes: 398_000_000,
  license: 'Apache-2.0',
} as const satisfies ModelManifestEntry;

export const DEFAULT_MODEL_URI: string = DEFAULT_MODEL.uri;

/** Where pulled models are stored: $HEARTH_MODELS_DIR, else ~/.cache/hearth/models. */
export function defaultModelsDir(): string {
  const fromEnv = process.env['HEARTH_MODELS_DIR'];
  return fromEnv !== undefined && fromEnv !== '' ? fromEnv : join(homedir(), '.cache', 'hearth', 'models');
}
