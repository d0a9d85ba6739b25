#include "prompt_cache.h"

#include <algorithm>
#include <new>

namespace hearth {

namespace {

size_t commonPrefix(const std::vector<llama_token> & a, const std::vector<llama_token> & b, size_t limit) {
    const size_t n = std::min({ a.size(), b.size(), limit });
    size_t i = 0;
    while (i < n && a[i] == b[i]) {
        i++;
    }
    return i;
}

}  // namespace

void PromptCache::save(llama_context * ctx, llama_seq_id seq, const std::vector<llama_token> & tokens) {
    if (!enabled() || tokens.empty()) {
        return;
    }
    for (const auto & e : entries_) {
        if (e.tokens.size() >= tokens.size() && commonPrefix(e.tokens, tokens, tokens.size()) == tokens.size()) {
            return;  // already held (this entry may be where the sequence was restored from)
        }
    }
    const size_t size = llama_state_seq_get_size(ctx, seq);
    if (size == 0 || size > maxBytes_) {
        return;
    }
    for (auto it = entries_.begin(); it != entries_.end();) {
        if (commonPrefix(it->tokens, tokens, it->tokens.size()) == it->tokens.size()) {
            bytes_ -= it->state.size();
            it = entries_.erase(it);
        } else {
            ++it;
        }
    }
    while (!entries_.empty() && bytes_ + size > maxBytes_) {
        bytes_ -= entries_.back().state.size();
        entries_.pop_back();
    }
    Entry entry;
    try {
        entry.state.resize(size);
        entry.tokens = tokens;
    } catch (const std::bad_alloc &) {
        return;  // the cache is an optimisation: without memory, the prompt is evaluated again later
    }
    if (llama_state_seq_get_data(ctx, entry.state.data(), size, seq) != size) {
        return;
    }
    bytes_ += size;
    entries_.push_front(std::move(entry));
}

int32_t PromptCache::restore(llama_context * ctx, llama_seq_id seq, const std::vector<llama_token> & prompt, int32_t minPrefix,
                             int32_t maxPrefix, std::vector<llama_token> & held) {
    if (!enabled() || maxPrefix <= minPrefix) {
        return 0;
    }
    auto best = entries_.end();
    size_t bestPrefix = (size_t) minPrefix;
    for (auto it = entries_.begin(); it != entries_.end(); ++it) {
        const size_t n = commonPrefix(it->tokens, prompt, (size_t) maxPrefix);
        if (n > bestPrefix) {
            bestPrefix = n;
            best = it;
        }
    }
    if (best == entries_.end()) {
        return 0;
    }
    llama_memory_t memory = llama_get_memory(ctx);
    llama_memory_seq_rm(memory, seq, -1, -1);
    if (llama_state_seq_set_data(ctx, best->state.data(), best->state.size(), seq) != best->state.size()) {
        llama_memory_seq_rm(memory, seq, -1, -1);
        return -1;
    }
    entries_.splice(entries_.begin(), entries_, best);  // most recently used
    held = best->tokens;
    return (int32_t) bestPrefix;
}

}  // namespace hearth
