/**
 * What a model can serve, from its GGUF metadata: a BERT-family encoder (bge, nomic-embed-text, all-MiniLM, e5,
 * jina, ...) computes embeddings only: it has no output head, so it cannot generate. The native engine's copy of
 * this rule is native/src/model_kind.cpp; keep them alike.
 */

/** llama.cpp's BERT-family architectures (encoders with sequence pooling, no output head). */
const ENCODER_ARCHITECTURES: ReadonlySet<string> = new Set([
  'bert',
  'nomic-bert',
  'nomic-bert-moe',
  'jina-bert-v2',
  'jina-bert-v3',
  'modern-bert',
  'neo-bert',
  'eurobert',
]);

/**
 * True for an embeddings-only encoder: its architecture is one of llama.cpp's BERT family, or its GGUF says
 * `<arch>.attention.causal = false` (as every converted BERT-family file does). `metadata`: node-llama-cpp's
 * nested GGUF metadata (`general.architecture` as metadata.general.architecture).
 */
export function servesEmbeddingsOnly(metadata: unknown): boolean {
  const md = metadata as Record<string, Record<string, unknown> | undefined>;
  const arch = md.general?.architecture;
  if (typeof arch !== 'string') return false;
  if (ENCODER_ARCHITECTURES.has(arch)) return true;
  const attention = md[arch]?.attention as Record<string, unknown> | undefined;
  return attention?.causal === false;
}
