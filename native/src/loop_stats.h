// The slot loop's counters, listed once: LoopStats (a snapshot), LoopCounters (the loop thread's live atomics) and
// the JavaScript object SlotLoopWrap::Stats returns (native/binding.ts NativeLoopStats, the same names) are all made
// from HEARTH_LOOP_STATS, so a counter added here appears in all three.
#pragma once

#include <atomic>
#include <cstdint>

// X(name): one counter. Since the loop started unless said "now".
#define HEARTH_LOOP_STATS(X)                                                                                          \
    X(steps)               /* llama_decode calls */                                                                    \
    X(promptTokens)        /* prompt tokens evaluated (cached ones excluded) */                                       \
    X(generatedTokens)     /* completion tokens sampled */                                                            \
    X(migrations)          /* KV streams copied to close gaps between busy slots */                                   \
    X(promptCacheRestores) /* jobs that started from a host prompt cache entry */                                     \
    X(promptCacheLookups)  /* jobs that looked in the host prompt cache */                                            \
    X(promptCacheBytes)    /* now: state bytes the host prompt cache holds */                                         \
    X(promptCacheEntries)  /* now: entries it holds */                                                                \
    X(kvCellsUsed)         /* now: KV cells the running jobs' sequences hold (prompt + generated, reused prefix) */   \
    X(kvCellsTotal)        /* KV cells of the whole context (llama_n_ctx; 0 before the model is loaded) */            \
    X(preemptions)         /* batch jobs parked so that a waiting interactive job got their slot */                   \
    X(parked)              /* now: batch jobs parked (waiting to resume) */

namespace hearth {

/** A snapshot of the counters; plain values, any thread. */
struct LoopStats {
#define HEARTH_STAT_FIELD(name) uint64_t name = 0;
    HEARTH_LOOP_STATS(HEARTH_STAT_FIELD)
#undef HEARTH_STAT_FIELD
};

/** The live counters: written by the loop thread, read by any thread (relaxed: each value alone is what counts). */
struct LoopCounters {
#define HEARTH_STAT_ATOMIC(name) std::atomic<uint64_t> name{0};
    HEARTH_LOOP_STATS(HEARTH_STAT_ATOMIC)
#undef HEARTH_STAT_ATOMIC

    LoopStats snapshot() const {
        LoopStats st;
#define HEARTH_STAT_LOAD(name) st.name = name.load(std::memory_order_relaxed);
        HEARTH_LOOP_STATS(HEARTH_STAT_LOAD)
#undef HEARTH_STAT_LOAD
        return st;
    }
};

}  // namespace hearth
