#include "token_logprobs.h"

#include <algorithm>
#include <cmath>

namespace hearth {

RawLogprobs rawLogprobs(const float * logits, int32_t nVocab, llama_token chosen, int32_t topN) {
    float maxLogit = -INFINITY;
    for (int32_t t = 0; t < nVocab; t++) {
        maxLogit = std::max(maxLogit, logits[t]);
    }
    double sum = 0.0;
    for (int32_t t = 0; t < nVocab; t++) {
        sum += std::exp((double) logits[t] - (double) maxLogit);
    }
    const double logNorm = (double) maxLogit + std::log(sum);

    RawLogprobs out;
    out.chosen = (float) ((double) logits[chosen] - logNorm);
    const int32_t n = std::min(topN, nVocab);
    if (n <= 0) {
        return out;
    }
    // A sorted window of the n best so far; most tokens fall below its last entry and cost one compare.
    auto better = [](const std::pair<llama_token, float> & a, const std::pair<llama_token, float> & b) {
        return a.second > b.second || (a.second == b.second && a.first < b.first);
    };
    std::vector<std::pair<llama_token, float>> best;
    best.reserve((size_t) n + 1);
    for (int32_t t = 0; t < nVocab; t++) {
        const std::pair<llama_token, float> item{ t, logits[t] };
        if ((int32_t) best.size() == n && !better(item, best.back())) {
            continue;
        }
        best.insert(std::upper_bound(best.begin(), best.end(), item, better), item);
        if ((int32_t) best.size() > n) {
            best.pop_back();
        }
    }
    out.top.reserve(best.size());
    for (const auto & b : best) {
        out.top.emplace_back(b.first, (float) ((double) b.second - logNorm));
    }
    return out;
}

}  // namespace hearth
