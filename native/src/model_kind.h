// What a loaded model can serve, from its GGUF: a BERT-family encoder (bge, nomic-embed-text, all-MiniLM, e5,
// jina, ...) computes embeddings only: it has no output head, so it cannot generate. The same rule as
// src/worker/model-kind.ts (the node-llama-cpp engine's copy).
#pragma once

#include <cstdint>

#include "llama.h"

namespace hearth {

/**
 * True when the model is an embeddings-only encoder: its GGUF says `<arch>.attention.causal = false` (as every
 * converted BERT-family file does), or its architecture is one of llama.cpp's BERT family.
 */
bool servesEmbeddingsOnly(const llama_model * model);

/** The longest input the model's own positions allow (`<arch>.context_length`), or INT32_MAX when it says none. */
int32_t trainedContextLength(const llama_model * model);

}  // namespace hearth
