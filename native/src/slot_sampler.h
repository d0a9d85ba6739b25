// A job's llama.cpp sampler chain. Owned by the slot running the job; used only on the loop thread.
#pragma once

#include <vector>

#include "llama.h"
#include "loop_types.h"

namespace hearth {

class SlotSampler {
public:
    /**
     * Builds llama-server's chain for the settings that Hearth exposes:
     * [logit bias of the model's suppress tokens] -> [penalties] -> greedy            (temperature <= 0)
     * [logit bias of the model's suppress tokens] -> [penalties] -> [top-k] -> [top-p] -> [min-p] -> temp -> dist(seed)
     * Penalty state is primed with the prompt, as llama-server does.
     */
    SlotSampler(const SamplingSpec & spec, const llama_vocab * vocab, int32_t slotContext,
                const std::vector<llama_token> & prompt);
    ~SlotSampler();
    SlotSampler(const SlotSampler &) = delete;
    SlotSampler & operator=(const SlotSampler &) = delete;

    /** Samples (and accepts) the next token from output row `outputIndex` of the last decode. */
    llama_token sample(llama_context * ctx, int32_t outputIndex);

private:
    llama_sampler * chain_ = nullptr;
    /** Plain greedy with nothing before it: an argmax over the logits, no candidate array. */
    bool plainGreedy_ = false;
    int32_t nVocab_ = 0;
};

}  // namespace hearth
