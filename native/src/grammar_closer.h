// Closing a grammar in time: how many tokens, at most, a job's grammar still needs before it is complete
// (allows end-of-generation), found by a greedy walk over a small "closing alphabet" of single tokens on a
// clone of the grammar sampler (public llama.cpp API only). SlotSampler uses it near a job's max_tokens so
// that a JSON reply cut by the budget is still complete JSON.
#pragma once

#include <cstdint>
#include <vector>

#include "llama.h"

namespace hearth {

class GrammarCloser {
public:
    /** A walk that found no completion within its cap. */
    static constexpr int32_t kUnreachable = INT32_MAX;

    /**
     * Scans the vocabulary once for the closing alphabet. A walk step takes end-of-generation where allowed;
     * else, inside a string (where the grammar allows a letter), the first allowed of `"}` `"]` `"`; elsewhere
     * the first allowed of `]}` `}}` `}` `]` `0` `""` `{}` `[]` `null` `true` `"`; else the first allowed
     * single printable ASCII character, then whitespace (e.g. the letters of a key the schema names).
     */
    explicit GrammarCloser(const llama_vocab * vocab);

    /**
     * The number of tokens of the greedy walk from `grammar`'s state (unchanged: the walk runs on a clone) to
     * a state that allows end-of-generation, or kUnreachable if that takes more than `cap` tokens or the
     * alphabet has no allowed token. Every walk is a real path, so the grammar can always complete in that
     * many tokens. `first` (optional) receives the walk's first token (-1 when the grammar is already complete).
     */
    int32_t length(const llama_sampler * grammar, int32_t cap, llama_token * first = nullptr);

    /** length() after `grammar` accepts `token` (which it must allow), on a clone. */
    int32_t lengthAfter(const llama_sampler * grammar, llama_token token, int32_t cap);

    /** The end-of-generation token of the alphabet, or -1 when the vocabulary has none. */
    llama_token eog() const { return eog_; }

private:
    int32_t walk(llama_sampler * grammar, int32_t cap, llama_token * first);
    /** The first token of `tokens` (in order) that the grammar allows, or -1. */
    llama_token firstAllowed(llama_sampler * grammar, const std::vector<llama_token> & tokens);

    llama_token eog_ = -1;
    std::vector<llama_token> preferredIds_;  // by Preferred (grammar_closer.cpp); -1 where no token has that piece
    llama_token probe_ = -1;               // a letter token: allowed only inside a string
    std::vector<llama_token> characters_;  // the single characters, in priority order
    std::vector<llama_token_data> scratch_;
};

}  // namespace hearth
