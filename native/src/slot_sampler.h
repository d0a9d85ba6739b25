// A job's llama.cpp sampler chain, and its grammar when the job has one. Owned by the slot running the
// job; used only on the loop thread.
#pragma once

#include <string>
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
     * Penalty state is primed with the prompt, as llama-server does. `grammar` (may be null; owned from
     * now on) constrains every sampled token and allows end-of-generation only where the grammar is
     * complete.
     */
    SlotSampler(const SamplingSpec & spec, const llama_vocab * vocab, int32_t slotContext,
                const std::vector<llama_token> & prompt, llama_sampler * grammar);
    ~SlotSampler();
    SlotSampler(const SlotSampler &) = delete;
    SlotSampler & operator=(const SlotSampler &) = delete;

    /**
     * Samples (and accepts) the next token from output row `outputIndex` of the last decode. Returns -1
     * with `error` set when the grammar leaves no token possible or rejects the sampled one.
     */
    llama_token sample(llama_context * ctx, int32_t outputIndex, std::string & error);

private:
    /** llama-server's order: sample freely; only if the grammar rejects that token, sample again constrained. */
    llama_token sampleWithGrammar(const float * logits, std::string & error);
    void fillCandidates(const float * logits);

    llama_sampler * chain_ = nullptr;
    llama_sampler * grammar_ = nullptr;
    /** Plain greedy with nothing before it: an argmax over the logits, no candidate array. */
    bool plainGreedy_ = false;
    int32_t nVocab_ = 0;
    /** Grammar jobs only: the candidate array, reused for every token. */
    std::vector<llama_token_data> candidates_;
};

}  // namespace hearth
