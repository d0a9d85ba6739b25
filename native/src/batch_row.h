// One row of a llama_batch: a token at a position of one sequence, with or without its logits. Shared by the slot
// loop and the step-cost probe (bench/probes/step-cost.cpp), so the probe times the batches the loop builds.
#pragma once

#include <cstdint>

#include "llama.h"

namespace hearth {

/** Appends a row to `batch` (the caller keeps n_tokens within llama_batch_init's size) and returns its index. */
inline int32_t addBatchRow(llama_batch & batch, llama_token token, llama_pos pos, llama_seq_id seq, bool output) {
    const int32_t i = batch.n_tokens++;
    batch.token[i] = token;
    batch.pos[i] = pos;
    batch.n_seq_id[i] = 1;
    batch.seq_id[i][0] = seq;
    batch.logits[i] = output ? 1 : 0;
    return i;
}

}  // namespace hearth
