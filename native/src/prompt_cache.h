// Host-memory prompt cache: KV states of sequences a slot had to give up, kept in RAM so that a later
// job whose prompt starts with the same tokens restores them instead of evaluating them again
// (llama-server's --cache-ram). The slots' own KV is the first-level prefix cache; this one holds what
// no slot has room for any more: more distinct conversations than slots, alternating system prompts.
//
// Threads: loop thread only (owned by the SlotLoop, called between decode steps).
#pragma once

#include <cstddef>
#include <cstdint>
#include <list>
#include <vector>

#include "llama.h"

namespace hearth {

class PromptCache {
public:
    /** maxBytes: total state bytes kept; 0 disables the cache. */
    explicit PromptCache(size_t maxBytes) : maxBytes_(maxBytes) {}

    bool enabled() const { return maxBytes_ > 0; }

    /**
     * Copies sequence `seq`'s KV state, which holds exactly `tokens` at positions 0..n-1, into the cache
     * (least recently used entries go first to make room). Skipped when an entry already holds these
     * tokens or more, or when the state alone is over the limit; entries that are prefixes of `tokens`
     * are dropped (this one holds them).
     */
    void save(llama_context * ctx, llama_seq_id seq, const std::vector<llama_token> & tokens);

    /**
     * When an entry shares more than `minPrefix` leading tokens with `prompt` (counting at most
     * `maxPrefix`), replaces sequence `seq`'s KV with the best one's, sets `held` to the tokens `seq` now
     * holds and returns the shared prefix length. Returns 0 when no entry is better (`seq` untouched) and
     * -1 when the restore failed (`seq` is then empty).
     */
    int32_t restore(llama_context * ctx, llama_seq_id seq, const std::vector<llama_token> & prompt, int32_t minPrefix,
                    int32_t maxPrefix, std::vector<llama_token> & held);

    size_t bytes() const { return bytes_; }
    size_t entries() const { return entries_.size(); }

private:
    struct Entry {
        std::vector<llama_token> tokens;
        std::vector<uint8_t> state;
    };

    /** Most recently used first. */
    std::list<Entry> entries_;
    const size_t maxBytes_;
    size_t bytes_ = 0;
};

}  // namespace hearth
