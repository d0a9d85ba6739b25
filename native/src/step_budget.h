// How many tokens one slot-loop step may decode. Pure; used on the loop thread.
#pragma once

#include <algorithm>
#include <cstdint>

namespace hearth {

/**
 * Rows of the next llama_decode: every generating slot gets one row; prompt chunks share the rest.
 * `stepTokenBudget` (> 0) caps the whole step while at least one slot is generating, so a long prompt
 * is prefilled in chunks and the generating slots keep their cadence; with nobody generating, or with
 * 0, the cap is the context's batch size. Never less than the generating rows plus one prompt token
 * (a prompt always makes progress).
 */
inline int32_t stepRowBudget(int32_t nBatch, int32_t stepTokenBudget, int32_t generating) {
    if (stepTokenBudget <= 0 || generating == 0) {
        return nBatch;
    }
    return std::min(nBatch, std::max(stepTokenBudget, generating + 1));
}

}  // namespace hearth
