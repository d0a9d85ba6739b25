#include "grammar_cache.h"

#include <exception>

#include "llama_runtime.h"

namespace hearth {

llama_sampler * GrammarCache::instantiate(const llama_vocab * vocab, const std::string & text, std::string & error) {
    auto it = entries_.find(text);
    if (it == entries_.end()) {
        llama_sampler * parsed = nullptr;
        clearLastLlamaErrorOnThisThread();
        try {
            parsed = llama_sampler_init_grammar(vocab, text.c_str(), "root");
        } catch (const std::exception & e) {
            error = std::string("invalid grammar: ") + e.what();
            return nullptr;
        }
        if (parsed == nullptr) {
            const std::string why = lastLlamaErrorOnThisThread();
            error = "invalid grammar" + (why.empty() ? std::string() : " (llama.cpp: " + why + ")");
            return nullptr;
        }
        if (entries_.size() >= capacity_ && !ages_.empty()) {
            auto oldest = entries_.find(ages_.back());
            llama_sampler_free(oldest->second.sampler);
            entries_.erase(oldest);
            ages_.pop_back();
        }
        ages_.push_front(text);
        it = entries_.emplace(text, Entry{ parsed, ages_.begin() }).first;
    } else {
        ages_.splice(ages_.begin(), ages_, it->second.age);
    }
    llama_sampler * copy = llama_sampler_clone(it->second.sampler);
    if (copy == nullptr) {
        error = "could not copy the parsed grammar";
    }
    return copy;
}

void GrammarCache::clear() {
    for (auto & kv : entries_) {
        llama_sampler_free(kv.second.sampler);
    }
    entries_.clear();
    ages_.clear();
}

}  // namespace hearth
