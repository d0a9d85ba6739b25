#include "grammar_closer.h"

#include <cmath>
#include <limits>
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

namespace {

// The preferred strings; kInString and kStructural are the orders in which a walk step tries them.
enum Preferred { kQuoteBrace, kQuoteBracket, kQuote, kBracketBrace, kBraces, kBrace, kBracket, kZero, kEmptyString,
                 kEmptyObject, kEmptyArray, kNull, kTrue, kPreferredCount };
const char * const kPreferredText[kPreferredCount] = { "\"}", "\"]", "\"", "]}", "}}", "}", "]", "0", "\"\"", "{}", "[]", "null", "true" };
/** Inside a string: close it (and what holds it) first; `}` or `]` there would only be more string. */
const Preferred kInString[] = { kQuoteBrace, kQuoteBracket, kQuote };
/** Elsewhere: close containers, then the shortest values, and open a string last. */
const Preferred kStructural[] = { kBracketBrace, kBraces, kBrace, kBracket, kZero, kEmptyString, kEmptyObject, kEmptyArray, kNull, kTrue, kQuote };

}  // namespace

GrammarCloser::GrammarCloser(const llama_vocab * vocab) {
    std::unordered_map<std::string, size_t> rank;
    for (size_t i = 0; i < kPreferredCount; i++) {
        rank.emplace(kPreferredText[i], i);
    }
    preferredIds_.assign(kPreferredCount, -1);
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
        if (it != rank.end() && preferredIds_[it->second] < 0) {
            preferredIds_[it->second] = t;
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
    }
    for (char c : { 'q', 'x', 'z' }) {
        if (probe_ < 0) {
            probe_ = single[(unsigned char) c];
        }
    }
    for (int c = 0x21; c < 0x7F; c++) {
        if (single[c] >= 0) {
            characters_.push_back(single[c]);
        }
    }
    for (int c : { ' ', '\n', '\t' }) {
        if (single[c] >= 0) {
            characters_.push_back(single[c]);
        }
    }
    scratch_.reserve(characters_.size() + kPreferredCount + 2);
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
        // One apply over end-of-generation, the preferred strings and the probe (a letter: allowed only inside a
        // string, where `}` and `]` would be content), then the first allowed in the order for where it stands.
        scratch_.clear();
        if (eog_ >= 0) {
            scratch_.push_back(llama_token_data{ eog_, 0.0f, 0.0f });
        }
        const size_t base = scratch_.size();
        for (llama_token t : preferredIds_) {
            scratch_.push_back(llama_token_data{ t < 0 ? 0 : t, t < 0 ? -INFINITY : 0.0f, 0.0f });
        }
        if (probe_ >= 0) {
            scratch_.push_back(llama_token_data{ probe_, 0.0f, 0.0f });
        }
        llama_token_data_array arr{ scratch_.data(), scratch_.size(), -1, false };
        llama_sampler_apply(grammar, &arr);  // keeps the order, marking rejects -inf
        if (eog_ >= 0 && std::isfinite(scratch_[0].logit)) {
            return steps;
        }
        const bool inString = probe_ >= 0 && std::isfinite(scratch_.back().logit);
        llama_token next = -1;
        auto pick = [&](const Preferred * order, size_t count) {
            for (size_t i = 0; i < count && next < 0; i++) {
                if (std::isfinite(scratch_[base + order[i]].logit)) {
                    next = preferredIds_[order[i]];
                }
            }
        };
        if (inString) {
            pick(kInString, sizeof(kInString) / sizeof(kInString[0]));
        } else {
            pick(kStructural, sizeof(kStructural) / sizeof(kStructural[0]));
        }
        if (next < 0) {
            next = firstAllowed(grammar, characters_);
        }
        if (next < 0) {
            return kUnreachable;
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

llama_token GrammarCloser::firstAllowed(llama_sampler * grammar, const std::vector<llama_token> & tokens) {
    scratch_.clear();
    for (llama_token t : tokens) {
        scratch_.push_back(llama_token_data{ t, 0.0f, 0.0f });
    }
    llama_token_data_array arr{ scratch_.data(), scratch_.size(), -1, false };
    llama_sampler_apply(grammar, &arr);
    for (size_t i = 0; i < arr.size; i++) {  // the grammar sampler keeps the order, marking rejects -inf
        if (std::isfinite(arr.data[i].logit)) {
            return arr.data[i].id;
        }
    }
    return -1;
}

}  // namespace hearth
