#include "embedder.h"

#include <algorithm>
#include <cmath>
#include <cstdlib>

#include "llama_runtime.h"
#include "model_kind.h"

namespace hearth {

namespace {

/** Inputs of one pass at most (sequence ids of the embedding context). */
constexpr int32_t kMaxPassSequences = 256;
/**
 * Short inputs are packed into passes of about this many tokens. Their attention is computed over the whole
 * pass (masked per sequence), a cost quadratic in its tokens that dominates on small models: packing more
 * buys no fewer decodes worth having. A longer input takes a pass of its own (the context holds the longest).
 */
constexpr int32_t kPackTokens = 512;

/** The pooling the GGUF declares (`<arch>.pooling_type`), or LLAMA_POOLING_TYPE_NONE when it declares none. */
enum llama_pooling_type declaredPooling(const llama_model * model) {
    char arch[128];
    if (llama_model_meta_val_str(model, "general.architecture", arch, sizeof arch) < 0) {
        return LLAMA_POOLING_TYPE_NONE;
    }
    char value[32];
    const std::string key = std::string(arch) + ".pooling_type";
    if (llama_model_meta_val_str(model, key.c_str(), value, sizeof value) < 0) {
        return LLAMA_POOLING_TYPE_NONE;
    }
    return (enum llama_pooling_type) std::atoi(value);
}

}  // namespace

Embedder::Embedder(llama_model * model, int32_t maxInputTokens, int32_t threads)
    : model_(model),
      // An encoder's inputs end where its position embeddings do (a decoder's rotary positions have no such end).
      maxInputTokens_(std::max(1, servesEmbeddingsOnly(model) ? std::min(maxInputTokens, trainedContextLength(model)) : maxInputTokens)),
      threads_(std::max(1, threads)) {}

Embedder::~Embedder() {
    close();
}

void Embedder::close() {
    closed_.store(true);
    std::lock_guard<std::mutex> lock(mutex_);
    if (batchAllocated_) {
        llama_batch_free(batch_);
        batchAllocated_ = false;
    }
    if (ctx_ != nullptr) {
        llama_free(ctx_);
        ctx_ = nullptr;
    }
    model_ = nullptr;
}

bool Embedder::ensureContext(EmbedFailure & failure) {
    if (ctx_ != nullptr) {
        return true;
    }
    const enum llama_pooling_type declared = declaredPooling(model_);
    const bool ownPooling = declared == LLAMA_POOLING_TYPE_MEAN || declared == LLAMA_POOLING_TYPE_CLS ||
                            declared == LLAMA_POOLING_TYPE_LAST;
    passTokens_ = std::max(maxInputTokens_, kPackTokens);
    passSequences_ = std::min<int32_t>(kMaxPassSequences, (int32_t) llama_max_parallel_sequences());
    llama_context_params cp = llama_context_default_params();
    cp.embeddings = true;
    cp.pooling_type = ownPooling ? LLAMA_POOLING_TYPE_UNSPECIFIED : LLAMA_POOLING_TYPE_MEAN;
    cp.n_ctx = (uint32_t) passTokens_;
    cp.n_batch = (uint32_t) passTokens_;
    cp.n_ubatch = (uint32_t) passTokens_;  // a sequence is pooled within one ubatch
    cp.n_seq_max = (uint32_t) passSequences_;
    cp.kv_unified = true;                  // one KV buffer of n_ctx shared by the pass's sequences
    cp.n_threads = threads_;
    cp.n_threads_batch = threads_;
    cp.no_perf = true;
    cp.abort_callback = abortWhenFlagSet;
    cp.abort_callback_data = &closed_;
    ctx_ = llama_init_from_model(model_, cp);
    if (ctx_ == nullptr) {
        failure = { "embedding_failed", "llama.cpp could not create an embedding context of " + std::to_string(passTokens_) + " tokens" };
        return false;
    }
    if (llama_pooling_type(ctx_) == LLAMA_POOLING_TYPE_NONE || llama_pooling_type(ctx_) == LLAMA_POOLING_TYPE_RANK) {
        llama_free(ctx_);
        ctx_ = nullptr;
        failure = { "embedding_failed", "the model's embedding context pools no sequence vectors" };
        return false;
    }
    dimensions_ = llama_model_n_embd_out(model_);
    batch_ = llama_batch_init(passTokens_, 0, 1);
    batchAllocated_ = true;
    return true;
}

bool Embedder::embed(const std::vector<std::vector<llama_token>> & inputs, EmbedResult & result, EmbedFailure & failure) {
    std::lock_guard<std::mutex> lock(mutex_);
    if (closed_.load() || model_ == nullptr) {
        failure = { "engine_disposed", "the engine is disposed" };
        return false;
    }
    const int32_t vocabSize = llama_vocab_n_tokens(llama_model_get_vocab(model_));
    for (size_t i = 0; i < inputs.size(); i++) {
        const auto & in = inputs[i];
        if (in.empty() || (int32_t) in.size() > maxInputTokens_) {
            failure = { "invalid_input", "input " + std::to_string(i) + " has " + std::to_string(in.size()) + " tokens (1.." +
                                             std::to_string(maxInputTokens_) + " allowed)" };
            return false;
        }
        for (llama_token t : in) {
            if (t < 0 || t >= vocabSize) {
                failure = { "invalid_input", "input " + std::to_string(i) + " holds a token id outside the vocabulary" };
                return false;
            }
        }
    }
    if (!ensureContext(failure)) {
        return false;
    }
    result.dimensions = dimensions_;
    result.vectors.assign(inputs.size() * (size_t) dimensions_, 0.0f);
    result.passes = 0;
    // Passes in order: as many inputs as fit kPackTokens and the sequences (always one: it fits passTokens_).
    const int32_t pack = std::min(passTokens_, kPackTokens);
    size_t first = 0;
    while (first < inputs.size()) {
        size_t count = 0;
        int32_t tokens = 0;
        while (first + count < inputs.size() && (int32_t) count < passSequences_ &&
               (count == 0 || tokens + (int32_t) inputs[first + count].size() <= pack)) {
            tokens += (int32_t) inputs[first + count].size();
            count++;
        }
        if (!runPass(inputs, first, count, result, failure)) {
            return false;
        }
        first += count;
    }
    return true;
}

bool Embedder::runPass(const std::vector<std::vector<llama_token>> & inputs, size_t first, size_t count, EmbedResult & result,
                       EmbedFailure & failure) {
    llama_memory_t memory = llama_get_memory(ctx_);
    if (memory != nullptr) {
        llama_memory_clear(memory, true);
    }
    batch_.n_tokens = 0;
    for (size_t s = 0; s < count; s++) {
        const auto & in = inputs[first + s];
        for (size_t p = 0; p < in.size(); p++) {
            const int32_t row = batch_.n_tokens++;
            batch_.token[row] = in[p];
            batch_.pos[row] = (llama_pos) p;
            batch_.n_seq_id[row] = 1;
            batch_.seq_id[row][0] = (llama_seq_id) s;
            batch_.logits[row] = 1;
        }
    }
    const int32_t rc = llama_decode(ctx_, batch_);
    result.passes++;
    if (rc != 0) {
        failure = closed_.load() ? EmbedFailure{ "engine_disposed", "the engine is disposed" }
                                 : EmbedFailure{ "embedding_failed", "llama_decode failed (" + std::to_string(rc) + ")" };
        return false;
    }
    for (size_t s = 0; s < count; s++) {
        const float * v = llama_get_embeddings_seq(ctx_, (llama_seq_id) s);
        if (v == nullptr) {
            failure = { "embedding_failed", "llama.cpp returned no pooled vector" };
            return false;
        }
        double sum = 0.0;
        for (int32_t d = 0; d < dimensions_; d++) {
            sum += (double) v[d] * (double) v[d];
        }
        const double norm = std::sqrt(sum);
        const float scale = norm > 0.0 ? (float) (1.0 / norm) : 0.0f;
        float * out = result.vectors.data() + (first + s) * (size_t) dimensions_;
        for (int32_t d = 0; d < dimensions_; d++) {
            out[d] = v[d] * scale;
        }
    }
    return true;
}

}  // namespace hearth
