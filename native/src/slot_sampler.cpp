#include "slot_sampler.h"

#include <algorithm>
#include <cmath>
#include <cstdlib>
#include <exception>

#include "first_max.h"
#include "top_k.h"

namespace hearth {

namespace {

/** kClosingHorizon, or HEARTH_CLOSING_HORIZON where set (0 turns closing off: a benchmark's A/B knob). */
int32_t closingHorizon() {
    static const int32_t horizon = [] {
        const char * env = std::getenv("HEARTH_CLOSING_HORIZON");
        return env != nullptr ? std::atoi(env) : SlotSampler::kClosingHorizon;
    }();
    return horizon;
}

}  // namespace

SlotSampler::SlotSampler(const SamplingSpec & s, const llama_vocab * vocab, int32_t slotContext,
                         const std::vector<llama_token> & prompt, llama_sampler * grammar, const Utf8TokenTable * utf8) {
    vocab_ = vocab;
    grammar_ = grammar;
    utf8_ = utf8;
    nVocab_ = llama_vocab_n_tokens(vocab);
    llama_sampler_chain_params cp = llama_sampler_chain_default_params();
    cp.no_perf = true;
    chain_ = llama_sampler_chain_init(cp);

    int32_t nSuppress = 0;
    const llama_token * suppress = llama_vocab_get_suppress_tokens(vocab, &nSuppress);
    if (suppress != nullptr && nSuppress > 0) {
        std::vector<llama_logit_bias> bias;
        bias.reserve(nSuppress);
        for (int32_t i = 0; i < nSuppress; i++) {
            bias.push_back({ suppress[i], -INFINITY });
        }
        llama_sampler_chain_add(chain_, llama_sampler_init_logit_bias(nVocab_, (int32_t) bias.size(), bias.data()));
    }

    const int32_t lastN = s.penaltyLastN < 0 ? slotContext : s.penaltyLastN;
    const bool penalties = lastN > 0 && (s.repeatPenalty != 1.0f || s.frequencyPenalty != 0.0f || s.presencePenalty != 0.0f);
    if (penalties) {
        llama_sampler_chain_add(chain_, llama_sampler_init_penalties(nVocab_, lastN, s.repeatPenalty, s.frequencyPenalty, s.presencePenalty));
    }

    if (s.temperature <= 0.0f) {
        llama_sampler_chain_add(chain_, llama_sampler_init_greedy());
        plainGreedy_ = !penalties && llama_sampler_chain_n(chain_) == 1 && grammar_ == nullptr;
    } else {
        // Nothing before top-k and no grammar: the k candidates come straight from the logits (top_k.h), the chain
        // starts after them.
        if (s.topK > 0 && s.topK < nVocab_ && llama_sampler_chain_n(chain_) == 0 && grammar_ == nullptr) {
            directTopK_ = s.topK;
        } else if (s.topK > 0) {
            llama_sampler_chain_add(chain_, llama_sampler_init_top_k(s.topK));
        }
        if (s.topP < 1.0f) {
            llama_sampler_chain_add(chain_, llama_sampler_init_top_p(s.topP, 1));
        }
        if (s.minP > 0.0f) {
            llama_sampler_chain_add(chain_, llama_sampler_init_min_p(s.minP, 1));
        }
        llama_sampler_chain_add(chain_, llama_sampler_init_temp(s.temperature));
        llama_sampler_chain_add(chain_, llama_sampler_init_dist(s.seed));
    }

    if (penalties) {
        const size_t from = prompt.size() > (size_t) lastN ? prompt.size() - lastN : 0;
        for (size_t i = from; i < prompt.size(); i++) {
            llama_sampler_accept(chain_, prompt[i]);
        }
    }
}

SlotSampler::~SlotSampler() {
    if (chain_ != nullptr) {
        llama_sampler_free(chain_);
    }
    if (grammar_ != nullptr) {
        llama_sampler_free(grammar_);
    }
}

llama_token SlotSampler::sample(const float * logits, std::string & error, int32_t remaining) {
    if (grammar_ != nullptr) {
        return sampleWithGrammar(logits, error, remaining);
    }
    if (plainGreedy_) {
        return firstMaxIndex(logits, nVocab_);  // first maximum wins, as llama.cpp's greedy sampler
    }
    // llama_sampler_sample's CPU path, on logits the caller fetched (so that rows can be sampled on other threads).
    if (directTopK_ > 0) {
        topKCandidates(logits, nVocab_, directTopK_, candidates_);  // what llama.cpp's top-k leaves: k of them, sorted
    } else {
        fillCandidates(logits);
    }
    llama_token_data_array cur{ candidates_.data(), candidates_.size(), -1, directTopK_ > 0 };
    llama_sampler_apply(chain_, &cur);
    if (cur.selected < 0 || cur.selected >= (int64_t) cur.size) {
        error = "the sampler chain selected no token";
        return -1;
    }
    const llama_token token = cur.data[cur.selected].id;
    llama_sampler_accept(chain_, token);
    return token;
}

void SlotSampler::fillCandidates(const float * logits) {
    candidates_.resize((size_t) nVocab_);
    for (int32_t t = 0; t < nVocab_; t++) {
        candidates_[t] = llama_token_data{ t, logits[t], 0.0f };
    }
}

void SlotSampler::fillUtf8Candidates(const float * logits) {
    candidates_.resize((size_t) nVocab_);
    size_t n = 0;
    for (int32_t t = 0; t < nVocab_; t++) {
        if (utf8_->next(t, utf8State_) != kUtf8Invalid) {
            candidates_[n++] = llama_token_data{ t, logits[t], 0.0f };
        }
    }
    candidates_.resize(n);
}

llama_token SlotSampler::sampleWithGrammar(const float * logits, std::string & error, int32_t remaining) {
    try {
        fillCandidates(logits);
        llama_token_data_array all{ candidates_.data(), candidates_.size(), -1, false };
        llama_sampler_apply(chain_, &all);
        llama_token token = all.selected >= 0 ? all.data[all.selected].id : -1;

        bool allowed = false;
        if (token >= 0 && utf8_->next(token, utf8State_) != kUtf8Invalid) {
            llama_token_data one{ token, 1.0f, 0.0f };
            llama_token_data_array single{ &one, 1, -1, false };
            llama_sampler_apply(grammar_, &single);
            allowed = std::isfinite(one.logit);
        }
        if (!allowed) {
            fillUtf8Candidates(logits);
            llama_token_data_array constrained{ candidates_.data(), candidates_.size(), -1, false };
            llama_sampler_apply(grammar_, &constrained);
            bool any = false;
            for (size_t i = 0; i < constrained.size && !any; i++) {
                any = std::isfinite(constrained.data[i].logit);
            }
            if (!any) {
                error = "the grammar allows no token of the vocabulary here that keeps the text valid UTF-8";
                return -1;
            }
            llama_sampler_apply(chain_, &constrained);
            token = constrained.selected >= 0 ? constrained.data[constrained.selected].id : -1;
            if (token < 0 || !std::isfinite(constrained.data[constrained.selected].logit)) {
                error = "sampling under the grammar selected no allowed token";
                return -1;
            }
        }
        if (remaining <= closingHorizon()) {
            token = closeInTime(logits, token, remaining);
        }
        llama_sampler_accept(grammar_, token);
        llama_sampler_accept(chain_, token);
        utf8State_ = utf8_->next(token, utf8State_);
        return token;
    } catch (const std::exception & e) {
        error = std::string("grammar: ") + e.what();
        return -1;
    }
}

llama_token SlotSampler::closeInTime(const float * logits, llama_token token, int32_t remaining) {
    if (!closer_) {
        closer_ = std::make_unique<GrammarCloser>(vocab_);
    }
    const int32_t after = remaining - 1;  // tokens left once this one is taken
    if (llama_vocab_is_eog(vocab_, token)) {
        return token;
    }
    auto lengthAfter = [&](llama_token t, int32_t cap) {
        if (llama_vocab_is_eog(vocab_, t)) {
            return 0;
        }
        if (utf8_->next(t, utf8State_) != kUtf8Boundary) {
            return GrammarCloser::kUnreachable;  // the closing alphabet is ASCII: only from a character boundary
        }
        return closer_->lengthAfter(grammar_, t, cap);
    };
    if (lengthAfter(token, after) <= after) {
        return token;  // the grammar still completes in time: nothing changes
    }
    // Closing mode: the model's likeliest allowed tokens, in order, the first that leaves room to complete.
    fillUtf8Candidates(logits);
    llama_token_data_array allowed{ candidates_.data(), candidates_.size(), -1, false };
    llama_sampler_apply(grammar_, &allowed);
    const auto finiteEnd = std::partition(candidates_.begin(), candidates_.end(),
                                          [](const llama_token_data & d) { return std::isfinite(d.logit); });
    const size_t nAllowed = (size_t) (finiteEnd - candidates_.begin());
    const size_t k = std::min(nAllowed, (size_t) kClosingTopK);
    std::partial_sort(candidates_.begin(), candidates_.begin() + k, finiteEnd,
                      [](const llama_token_data & a, const llama_token_data & b) { return a.logit > b.logit; });
    for (size_t i = 0; i < k; i++) {
        const llama_token t = candidates_[i].id;
        if (lengthAfter(t, after) <= after) {
            return t;
        }
    }
    // The closer's own walk: its first token keeps the grammar completable whenever the walk fits, and is the
    // shortest completion known when none fits.
    llama_token first = -1;
    const int32_t walk = utf8State_ == kUtf8Boundary ? closer_->length(grammar_, kClosingHorizon, &first) : GrammarCloser::kUnreachable;
    if (walk == 0 && closer_->eog() >= 0) {
        return closer_->eog();  // complete, and nothing else fits: end here
    }
    return first >= 0 && walk != GrammarCloser::kUnreachable ? first : token;
}

}  // namespace hearth
