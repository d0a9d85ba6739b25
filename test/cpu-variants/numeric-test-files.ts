/**
 * The test files whose assertions compare numbers computed along two paths of different arithmetic (packed and
 * one-input embedding passes, batched and lone generation, the two engines, BERT against node-llama-cpp):
 * run.ts runs them once per CPU build of ggml. Kept small (each adds its time once per build): a claim the e2e
 * suites make over HTTP on the same arithmetic (e2e/embeddings/embeddings.test.ts packing) is covered here by the in-process
 * file that tests that arithmetic. Their tolerances say what the claim is about (docs/operations.md
 * "Tests", "Numbers from two paths"); add a file here when it makes such a comparison.
 */
export const NUMERIC_TEST_FILES = [
  'test/model/native-embedder.test.ts', // packed and lone passes (tiny llama, BERT): the embedder e2e/embeddings/embeddings.test.ts serves
  'test/e2e/embeddings/embeddings-encoder-agreement.test.ts',
  'test/model/grammar-logprobs.test.ts',
  'test/model/native-slot-engine.test.ts',
  'test/contract/slot-engine.contract.test.ts',
];
