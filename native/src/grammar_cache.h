// Parsed GBNF grammars of one slot loop, by grammar text. Each distinct text is parsed once into a
// llama.cpp grammar sampler kept as a template; a job gets a clone (fresh parse state, no re-parse).
// Owned by the SlotLoop; used only on the loop thread. Bounded: the least recently used template is freed
// once `capacity` are held.
#pragma once

#include <cstddef>
#include <list>
#include <string>
#include <unordered_map>

#include "llama.h"

namespace hearth {

class GrammarCache {
public:
    explicit GrammarCache(size_t capacity) : capacity_(capacity) {}
    ~GrammarCache() { clear(); }
    GrammarCache(const GrammarCache &) = delete;
    GrammarCache & operator=(const GrammarCache &) = delete;

    /**
     * A new grammar sampler for `text` (root rule "root"), owned by the caller; nullptr with `error` set
     * when llama.cpp cannot parse it (syntax error, undefined rule, no `root`, left recursion).
     */
    llama_sampler * instantiate(const llama_vocab * vocab, const std::string & text, std::string & error);

    /** Frees every template (before the vocabulary they refer to goes away). */
    void clear();

    size_t size() const { return entries_.size(); }

private:
    struct Entry {
        llama_sampler * sampler;
        std::list<std::string>::iterator age;
    };

    size_t capacity_;
    std::unordered_map<std::string, Entry> entries_;
    std::list<std::string> ages_;  // most recently used first
};

}  // namespace hearth
