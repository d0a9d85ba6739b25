#include "grammar_closer.h"

#include <cmath>
#include <string>
#include <unordered_map>

namespace hearth {

namespace {

/** Frees a cloned sampler when the walk ends. */
struct ClonedSampler {
    llama_sampler * s;
    explicit ClonedSampler(const llama_sampler * from) : s(llama_sampler_clone(from)) {}
    ~ClonedSampler() { if (s != nullptr) llama_sampler_free(s); }
    ClonedSampler(const ClonedSampler &) = delete;
    ClonedSampler & operator=(const ClonedSampler &) = delete;
};

}  // namespace

GrammarCloser::GrammarCloser(const llama_vocab * vocab) {
    static const char * const kPreferred[] = { "\"}", "]}", "}}", "\"]", "\"", "}", "]", "0", "\"\"", "{}", "[]", "null", "true" };
    const size_t nPreferred = sizeof(kPreferred) / sizeof(kPreferred[0]);
    std::unordered_map<std::string, size_t> rank;
    for (size_t i = 0; i < nPreferred; i++) {
        rank.emplace(kPreferred[i], i);
    }
    std::vector<llama_token> preferred(nPreferred, -1);
    std::vector<llama_token> single(128, -1);  // by character
    const int32_t n = llama_vocab_n_tokens(vocab);
    char buf[16];
    for (llama_token t = 0; t < n; t++) {
        const int32_t len = llama_token_to_piece(vocab, t, buf, (int32_t) sizeof(buf), 0, false);
        if (len <= 0 || len > 4) {
            continue;
        }
        const std::string piece(buf, (size_t) len);
        const auto it = rank.find(piece);
        if (it != rank.end() && preferred[it->second] < 0) {
            preferred[it->second] = t;
        }
        const unsigned char c = (unsigned char) buf[0];
        if (len == 1 && c < 128 && single[c] < 0 && (c >= 0x20 || c == '\n' || c == '\t') && c != 0x7F) {
            single[c] = t;
        }
    }
    eog_ = llama_vocab_eos(vocab);
    if (eog_ == LLAMA_TOKEN_NULL) {
        eog_ = llama_vocab_eot(vocab);
    }
    if (eog_ == LLAMA_TOKEN_NULL) {
        eog_ = -1;
    } else {
        alphabet_.push_back(eog_);
    }
    for (llama_token t : preferred) {
        if (t >= 0) {
            alphabet_.push_back(t);
        }
    }
    for (int c = 0x21; c < 0x7F; c++) {
        if (single[c] >= 0) {
            alphabet_.push_back(single[c]);
        }
    }
    for (int c : { ' ', '\n', '\t' }) {
        if (single[c] >= 0) {
            alphabet_.push_back(single[c]);
        }
    }
    scratch_.reserve(alphabet_.size());
}

int32_t GrammarCloser::length(const llama_sampler * grammar, int32_t cap, llama_token * first) {
    ClonedSampler clone(grammar);
    return walk(clone.s, cap, first);
}

int32_t GrammarCloser::lengthAfter(const llama_sampler * grammar, llama_token token, int32_t cap) {
    ClonedSampler clone(grammar);
    llama_sampler_accept(clone.s, token);
    return walk(clone.s, cap, nullptr);
}

int32_t GrammarCloser::walk(llama_sampler * grammar, int32_t cap, llama_token * first) {
    if (first != nullptr) {
        *first = -1;
    }
    for (int32_t steps = 0;; steps++) {
        scratch_.clear();
        for (llama_token t : alphabet_) {
            scratch_.push_back(llama_token_data{ t, 0.0f, 0.0f });
        }
        llama_token_data_array arr{ scratch_.data(), scratch_.size(), -1, false };
        llama_sampler_apply(grammar, &arr);
        llama_token next = -1;
        for (size_t i = 0; i < arr.size; i++) {  // the grammar sampler keeps the order, marking rejects -inf
            if (std::isfinite(arr.data[i].logit)) {
                next = arr.data[i].id;
                break;
            }
        }
        if (next < 0) {
            return kUnreachable;
        }
        if (next == eog_) {
            return steps;
        }
        if (steps >= cap) {
            return kUnreachable;
        }
        if (steps == 0 && first != nullptr) {
            *first = next;
        }
        llama_sampler_accept(grammar, next);
    }
}

}  // namespace hearth
