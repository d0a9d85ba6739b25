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

void PromptCache::save(llama_context * ctx, llama_seq_id seq, const std::string & partition, const std::vector<llama_token> & tokens) {
    if (!enabled() || tokens.empty()) {
        return;
    }
    auto found = partitions_.find(partition);
    if (found != partitions_.end()) {
        for (const auto & e : found->second.entries) {
            if (e.tokens.size() >= tokens.size() && commonPrefix(e.tokens, tokens, tokens.size()) == tokens.size()) {
                return;  // already held (this entry may be where the sequence was restored from)
            }
        }
    }
    const size_t size = llama_state_seq_get_size(ctx, seq);
    if (size == 0 || size > maxBytes_) {
        return;
    }
    if (found != partitions_.end()) {
        Partition & p = found->second;
        for (auto it = p.entries.begin(); it != p.entries.end();) {
            if (commonPrefix(it->tokens, tokens, it->tokens.size()) == it->tokens.size()) {
                p.bytes -= it->state.size();
                bytes_ -= it->state.size();
                entries_--;
                it = p.entries.erase(it);
            } else {
                ++it;
            }
        }
        if (p.entries.empty()) {
            partitions_.erase(found);
        }
    }
    while (entries_ > 0 && bytes_ + size > maxBytes_) {
        evictOne(partition);
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
    try {
        Partition & p = partitions_[partition];
        p.entries.push_front(std::move(entry));
        p.bytes += size;
    } catch (const std::bad_alloc &) {
        auto empty = partitions_.find(partition);
        if (empty != partitions_.end() && empty->second.entries.empty()) {
            partitions_.erase(empty);
        }
        return;
    }
    bytes_ += size;
    entries_++;
}

void PromptCache::evictOne(const std::string & preferred) {
    auto victim = partitions_.end();
    for (auto it = partitions_.begin(); it != partitions_.end(); ++it) {
        if (victim == partitions_.end() || it->second.bytes > victim->second.bytes ||
            (it->second.bytes == victim->second.bytes && it->first == preferred)) {
            victim = it;
        }
    }
    if (victim == partitions_.end()) {
        return;
    }
    Partition & p = victim->second;
    const size_t size = p.entries.back().state.size();
    p.entries.pop_back();
    p.bytes -= size;
    bytes_ -= size;
    entries_--;
    if (p.entries.empty()) {
        partitions_.erase(victim);
    }
}

int32_t PromptCache::restore(llama_context * ctx, llama_seq_id seq, const std::string & partition, const std::vector<llama_token> & prompt,
                             int32_t minPrefix, int32_t maxPrefix, std::vector<llama_token> & held) {
    if (!enabled() || maxPrefix <= minPrefix) {
        return 0;
    }
    auto found = partitions_.find(partition);
    if (found == partitions_.end()) {
        return 0;  // no state of this partition: other partitions' entries are never looked at
    }
    std::list<Entry> & entries = found->second.entries;
    auto best = entries.end();
    size_t bestPrefix = (size_t) minPrefix;
    for (auto it = entries.begin(); it != entries.end(); ++it) {
        const size_t n = commonPrefix(it->tokens, prompt, (size_t) maxPrefix);
        if (n > bestPrefix) {
            bestPrefix = n;
            best = it;
        }
    }
    if (best == entries.end()) {
        return 0;
    }
    llama_memory_t memory = llama_get_memory(ctx);
    llama_memory_seq_rm(memory, seq, -1, -1);
    if (llama_state_seq_set_data(ctx, best->state.data(), best->state.size(), seq) != best->state.size()) {
        llama_memory_seq_rm(memory, seq, -1, -1);
        return -1;
    }
    entries.splice(entries.begin(), entries, best);  // most recently used
    held = best->tokens;
    return (int32_t) bestPrefix;
}

}  // namespace hearth
