// Top-k without a candidate for every token: the k largest logits of a row, largest first, as llama.cpp's top-k
// sampler leaves its candidates (k of them, sorted), without first copying the whole vocabulary into candidates and
// partially sorting them all (25-30 us for 32,000 tokens, ~100 us for 152,000, on a Zen 5 core). The row's largest
// value M is found in one vectorised pass; a vectorised count finds a bound T = M - w (w 2, 4, 8, ...) with at least
// k values at or above it, so the k largest are among those; only they are gathered and sorted. Equal logits: the
// lower token first (llama.cpp's partial sort leaves their order open: a tie may be ordered otherwise there, the
// distribution is the same). A row with NaN first, or whose bound never holds k values, takes the full sort; NaN comes
// after every number (only to make up k). Any thread.
#pragma once

#include <cstdint>
#include <vector>

#include "llama.h"

namespace hearth {

/** The k largest of logits[0..n) with their token ids, largest first, into `out` (1 <= k <= n). */
void topKCandidates(const float * logits, int32_t n, int32_t k, std::vector<llama_token_data> & out);

}  // namespace hearth
