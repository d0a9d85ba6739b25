// Host-memory prompt cache: KV states of sequences a slot had to give up, kept in RAM so that a later
// job whose prompt starts with the same tokens restores them instead of evaluating them again
// (llama-server's --cache-ram). The slots' own KV is the first-level prefix cache; this one holds what
// no slot has room for any more: more distinct conversations than slots, alternating system prompts.
//
// Partitions (issue #28): every entry belongs to a cache partition (an opaque string the job carries: the
// account, the key, or "" for one shared cache) and a lookup only ever walks its own partition's entries,
// so a prompt never matches state another partition made. The byte bound is shared fairly: room is made by
// evicting the least recently used entry of the partition that holds the most bytes, so a partition that
// floods the cache with distinct prompts evicts its own entries once it is the largest, never everyone
// else's. With a single partition this is plain LRU.
//
// Threads: loop thread only (owned by the SlotLoop, called between decode steps).
#pragma once

#include <cstddef>
#include <cstdint>
#include <list>
#include <string>
#include <unordered_map>
#include <vector>

#include "llama.h"

namespace hearth {

class PromptCache {
public:
    /** maxBytes: total state bytes kept; 0 disables the cache. */
    explicit PromptCache(size_t maxBytes) : maxBytes_(maxBytes) {}

    bool enabled() const { return maxBytes_ > 0; }

    /**
     * Copies sequence `seq`'s KV state, which holds exactly `tokens` at positions 0..n-1, into `partition`
     * (room is made as described above). Skipped when an entry of that partition already holds these
     * tokens or more, or when the state alone is over the limit; entries of that partition that are
     * prefixes of `tokens` are dropped (this one holds them).
     */
    void save(llama_context * ctx, llama_seq_id seq, const std::string & partition, const std::vector<llama_token> & tokens);

    /**
     * When an entry of `partition` shares more than `minPrefix` leading tokens with `prompt` (counting at most
     * `maxPrefix`), replaces sequence `seq`'s KV with the best one's, sets `held` to the tokens `seq` now
     * holds and returns the shared prefix length. Returns 0 when no entry is better (`seq` untouched) and
     * -1 when the restore failed (`seq` is then empty).
     */
    int32_t restore(llama_context * ctx, llama_seq_id seq, const std::string & partition, const std::vector<llama_token> & prompt,
                    int32_t minPrefix, int32_t maxPrefix, std::vector<llama_token> & held);

    size_t bytes() const { return bytes_; }
    size_t entries() const { return entries_; }
    /** Partitions holding at least one entry. */
    size_t partitions() const { return partitions_.size(); }

private:
    struct Entry {
        std::vector<llama_token> tokens;
        std::vector<uint8_t> state;
    };

    struct Partition {
        /** Most recently used first. */
        std::list<Entry> entries;
        size_t bytes = 0;
    };

    /** Drops the least recently used entry of the partition holding the most bytes (`preferred` on a tie). */
    void evictOne(const std::string & preferred);

    /** Partitions with at least one entry, by their key (the partition is part of every entry's key). */
    std::unordered_map<std::string, Partition> partitions_;
    const size_t maxBytes_;
    size_t bytes_ = 0;
    size_t entries_ = 0;
};

}  // namespace hearth
