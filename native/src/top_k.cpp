#include "top_k.h"

#include <algorithm>
#include <cmath>

#if defined(__x86_64__) && defined(__GNUC__) && !defined(__clang__)
#include <immintrin.h>
#endif

#include "first_max.h"
#include "lanes.h"

namespace hearth {

namespace {

/** How many of values[0..n) are >= bound (NaN never is). */
HEARTH_CPU_CLONES int32_t countAtLeast(const float * values, int32_t n, float bound) {
    IndexLanes counts = IndexLanes{};
    int32_t i = 0;
    for (; i + kLanes <= n; i += kLanes) {
        counts -= loadLanes(values + i) >= bound;  // a true lane is -1
    }
    int32_t count = 0;
    for (int32_t j = 0; j < kLanes; j++) {
        count += counts[j];
    }
    for (; i < n; i++) {
        count += values[i] >= bound ? 1 : 0;
    }
    return count;
}

/** Appends values[i + j] for every bit j of `mask` (the lanes of block i at or above the bound), in index order. */
inline void appendLanes(const float * values, int32_t i, uint32_t mask, std::vector<llama_token_data> & out) {
    while (mask != 0) {
        const int32_t j = __builtin_ctz(mask);
        out.push_back({ i + j, values[i + j], 0.0f });
        mask &= mask - 1;
    }
}

/**
 * Appends every value of values[0..n) that is >= bound, with its index, in index order: on x86-64 a block of 16
 * compared at once, its lanes at or above the bound as the bits of a mask (AVX-512: one compare; any other x86-64:
 * four SSE compares), the function chosen for the CPU at load (GCC's function multiversioning).
 */
#if defined(__x86_64__) && defined(__GNUC__) && !defined(__clang__)
__attribute__((target("avx512f"))) void gatherAtLeast(const float * values, int32_t n, float bound,
                                                     std::vector<llama_token_data> & out) {
    const __m512 b = _mm512_set1_ps(bound);
    int32_t i = 0;
    for (; i + kLanes <= n; i += kLanes) {
        const __mmask16 mask = _mm512_cmp_ps_mask(_mm512_loadu_ps(values + i), b, _CMP_GE_OQ);
        if (mask != 0) {
            appendLanes(values, i, mask, out);
        }
    }
    for (; i < n; i++) {
        if (values[i] >= bound) {
            out.push_back({ i, values[i], 0.0f });
        }
    }
}

__attribute__((target("default"))) void gatherAtLeast(const float * values, int32_t n, float bound,
                                                      std::vector<llama_token_data> & out) {
    const __m128 b = _mm_set1_ps(bound);
    int32_t i = 0;
    for (; i + kLanes <= n; i += kLanes) {
        uint32_t mask = 0;
        for (int32_t q = 0; q < kLanes / 4; q++) {
            mask |= (uint32_t) _mm_movemask_ps(_mm_cmpge_ps(_mm_loadu_ps(values + i + 4 * q), b)) << (4 * q);
        }
        if (mask != 0) {
            appendLanes(values, i, mask, out);
        }
    }
    for (; i < n; i++) {
        if (values[i] >= bound) {
            out.push_back({ i, values[i], 0.0f });
        }
    }
}
#else
void gatherAtLeast(const float * values, int32_t n, float bound, std::vector<llama_token_data> & out) {
    for (int32_t i = 0; i < n; i++) {
        if (values[i] >= bound) {
            out.push_back({ i, values[i], 0.0f });
        }
    }
}
#endif

/** a goes before b: a larger logit, or the same and a lower token. */
bool before(const llama_token_data & a, const llama_token_data & b) {
    return a.logit > b.logit || (a.logit == b.logit && a.id < b.id);
}

/** The bound's widths tried, from the largest value down: 2, 4, ... 2^kWidthSteps. */
constexpr int kWidthSteps = 12;

}  // namespace

void topKCandidates(const float * logits, int32_t n, int32_t k, std::vector<llama_token_data> & out) {
    out.clear();
    const float largest = logits[firstMaxIndex(logits, n)];
    bool bounded = false;
    if (std::isfinite(largest)) {
        float width = 2.0f;
        for (int step = 0; step < kWidthSteps && !bounded; step++, width *= 2.0f) {
            const float bound = largest - width;
            if (countAtLeast(logits, n, bound) >= k) {
                gatherAtLeast(logits, n, bound, out);
                bounded = true;
            }
        }
    }
    if (!bounded) {
        for (int32_t t = 0; t < n; t++) {
            if (!std::isnan(logits[t])) {
                out.push_back({ t, logits[t], 0.0f });
            }
        }
    }
    const size_t kept = std::min(out.size(), (size_t) k);
    std::partial_sort(out.begin(), out.begin() + (std::ptrdiff_t) kept, out.end(), before);
    out.resize(kept);
    // NaN has no order: after every number, by token, and only to make up k.
    for (int32_t t = 0; t < n && out.size() < (size_t) k; t++) {
        if (std::isnan(logits[t])) {
            out.push_back({ t, logits[t], 0.0f });
        }
    }
}

}  // namespace hearth
