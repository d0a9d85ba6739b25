// Log-probabilities of a sampled token under the model's raw distribution: the log-softmax of one row of
// logits over the whole vocabulary, before any sampler (logit bias, grammar, penalties, top-k/top-p/min-p,
// temperature) touched it, as OpenAI's `logprobs` report the model's own belief. Computed on the loop
// thread, only for jobs that asked for logprobs.
#pragma once

#include <cstdint>
#include <utility>
#include <vector>

#include "llama.h"

namespace hearth {

struct RawLogprobs {
    float chosen = 0.0f;
    /** The `topN` most likely tokens, best first (ties: lower token id first). */
    std::vector<std::pair<llama_token, float>> top;
};

/** One pass for the normaliser and one for the top `topN` (0..20) over `nVocab` logits. */
RawLogprobs rawLogprobs(const float * logits, int32_t nVocab, llama_token chosen, int32_t topN);

}  // namespace hearth
