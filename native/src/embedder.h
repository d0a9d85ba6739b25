// Batched embeddings on a slot loop's model: a second llama.cpp context on the loop's already-loaded
// llama_model, created at the first use with embeddings on and sequence pooling, that packs many inputs
// (one sequence id each) into one llama_decode per pass and reads each sequence's pooled vector.
//
// Pooling: a model whose GGUF declares a pooling (`<arch>.pooling_type`: mean, cls or last, as dedicated
// embedding models such as nomic-embed or bge do) gets its own; any other (a causal chat model) gets mean
// pooling over its last hidden states. Every vector is L2-normalised (as OpenAI's are). A BERT-family encoder
// (model_kind.h) runs the same way: llama_decode on a model without KV memory is llama.cpp's encode pass, and
// its inputs are held to the model's trained positions.
//
// Threads: embed() may run on any thread (the addon calls it from a Node-API async worker, off the
// JavaScript thread) while the slot loop generates on its own context: llama.cpp contexts of one model are
// independent. Calls are serialised by a mutex. close() (any thread) aborts a pass in flight (CPU), waits for
// it, frees the context and makes every later embed() fail: the owner calls it before the model is freed.
#pragma once

#include <atomic>
#include <cstdint>
#include <mutex>
#include <string>
#include <vector>

#include "llama.h"

namespace hearth {

/** Why embed() failed: a stable code (engine_disposed, invalid_input, embedding_failed) and a message. */
struct EmbedFailure {
    std::string code;
    std::string message;
};

/** What embed() returns: `inputs * dimensions` floats, each input's unit vector in order. */
struct EmbedResult {
    std::vector<float> vectors;
    int32_t dimensions = 0;
    /** llama_decode passes the inputs took. */
    int32_t passes = 0;
};

class Embedder {
public:
    /** `model` must outlive the embedder (or its close()); `maxInputTokens`: the longest input accepted. */
    Embedder(llama_model * model, int32_t maxInputTokens, int32_t threads);
    ~Embedder();
    Embedder(const Embedder &) = delete;
    Embedder & operator=(const Embedder &) = delete;

    /** Inputs of 1..maxInputTokens tokens of the model's vocabulary; false with `failure` otherwise. */
    bool embed(const std::vector<std::vector<llama_token>> & inputs, EmbedResult & result, EmbedFailure & failure);

    /** Idempotent; see the header comment. */
    void close();

private:
    bool ensureContext(EmbedFailure & failure);
    bool runPass(const std::vector<std::vector<llama_token>> & inputs, size_t first, size_t count, EmbedResult & result,
                 EmbedFailure & failure);

    std::mutex mutex_;
    std::atomic<bool> closed_{ false };
    llama_model * model_;
    const int32_t maxInputTokens_;
    const int32_t threads_;

    // Guarded by mutex_.
    llama_context * ctx_ = nullptr;
    llama_batch batch_{};
    bool batchAllocated_ = false;
    /** Tokens and sequences one pass holds (n_batch = n_ubatch = n_ctx; n_seq_max). */
    int32_t passTokens_ = 0;
    int32_t passSequences_ = 0;
    int32_t dimensions_ = 0;
};

}  // namespace hearth
