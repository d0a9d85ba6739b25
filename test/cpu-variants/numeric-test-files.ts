/**
 * The test files whose assertions compare numbers computed along two paths of different arithmetic (packed and
 * one-input embedding passes, batched and lone generation, the two engines, BERT against node-llama-cpp):
 * run.ts runs them once per CPU build of ggml. Their tolerances say what the claim is about (docs/testing.md,
 * "Numbers from two paths"); add a file here when it makes such a comparison.
 */
export const NUMERIC_TEST_FILES = [
  'test/e2e/embeddings.test.ts',
  'test/e2e/embeddings-encoder.test.ts',
  'test/model/native-embedder.test.ts',
  'test/model/grammar-logprobs.test.ts',
  'test/model/native-slot-engine.test.ts',
  'test/contract/slot-engine.contract.test.ts',
];
