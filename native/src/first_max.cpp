#include "first_max.h"

#include "lanes.h"

namespace hearth {

namespace {

/**
 * The first index of the largest of values[0..n), n >= kLanes, none of values[0..kLanes) NaN. Lane j sees the
 * values j, j + 16, j + 32, ... and keeps the largest and the block it came from, replaced only by a larger one (so
 * the first of its equal maxima; a NaN never replaces it, as in the plain scan). The answer is the smallest index
 * among the lanes holding the overall largest, unless the tail after the last whole block holds a larger one.
 */
HEARTH_CPU_CLONES int32_t firstMaxInLanes(const float * values, int32_t n) {
    Lanes best = loadLanes(values);
    IndexLanes bestBlock = IndexLanes{};
    IndexLanes block = IndexLanes{};
    const IndexLanes one = IndexLanes{} + 1;
    int32_t i = kLanes;
    for (; i + kLanes <= n; i += kLanes) {
        block += one;
        const Lanes x = loadLanes(values + i);
        const auto larger = x > best;
        best = larger ? x : best;
        bestBlock = larger ? block : bestBlock;
    }
    int32_t at = -1;
    float top = 0.0f;
    for (int32_t j = 0; j < kLanes; j++) {
        const int32_t index = bestBlock[j] * kLanes + j;
        if (at < 0 || best[j] > top || (best[j] == top && index < at)) {
            top = best[j];
            at = index;
        }
    }
    for (; i < n; i++) {
        if (values[i] > top) {
            top = values[i];
            at = i;
        }
    }
    return at;
}

}  // namespace

int32_t firstMaxIndexScan(const float * values, int32_t n) {
    int32_t best = 0;
    float bestValue = n > 0 ? values[0] : 0.0f;
    for (int32_t t = 1; t < n; t++) {
        if (values[t] > bestValue) {
            bestValue = values[t];
            best = t;
        }
    }
    return best;
}

int32_t firstMaxIndex(const float * values, int32_t n) {
    if (n < 4 * kLanes) {
        return firstMaxIndexScan(values, n);
    }
    for (int32_t j = 0; j < kLanes; j++) {
        if (values[j] != values[j]) {
            return firstMaxIndexScan(values, n);  // a NaN among the lanes' first values would hide that lane
        }
    }
    return firstMaxInLanes(values, n);
}

}  // namespace hearth
