// Persistent ggml compute threads for one llama_context, as llama-server's common_threadpools: the
// threads are created once and, between graphs, poll for `poll` rounds (0..100, ggml's unit) before they
// sleep, instead of ggml starting and joining a disposable pool inside every llama_decode.
// Also the load-time thread calibration behind `--threads 0`.
//
// Threads: everything here is called on the slot loop's own thread, the one that calls llama_decode.
// Lifetime: a ComputeThreads must outlive the context it was ever attached to (free it after llama_free):
// ggml's CPU backend keeps a pointer to the last pool it ran on, and pauses that pool when it switches
// to another one, so a pool freed while the context lives may be touched again.
#pragma once

#include <memory>
#include <string>
#include <vector>

#include "llama.h"

struct ggml_threadpool;

namespace hearth {

class ComputeThreads {
public:
    /**
     * Creates the pool(s) (one when threads == threadsBatch, else one each, the generation one paused).
     * Returns nullptr with `why` set when the CPU backend does not offer ggml_threadpool_new (the
     * context then keeps ggml's per-decode threads).
     */
    static std::unique_ptr<ComputeThreads> create(int32_t threads, int32_t threadsBatch, int32_t poll, std::string & why);
    /** Makes `ctx` decode on these threads (and sets its thread counts to match). */
    void attach(llama_context * ctx);
    int32_t threads() const { return threads_; }
    ~ComputeThreads();
    ComputeThreads(const ComputeThreads &) = delete;
    ComputeThreads & operator=(const ComputeThreads &) = delete;

    /** Detaches from the context it was attached to; idempotent. */
    void detach();

private:
    ComputeThreads() = default;
    llama_context * ctx_ = nullptr;
    int32_t threads_ = 0;
    int32_t threadsBatch_ = 0;
    ggml_threadpool * pool_ = nullptr;
    ggml_threadpool * poolBatch_ = nullptr;
    void (*free_)(ggml_threadpool *) = nullptr;
};

/** One measured candidate of the thread calibration. */
struct ThreadTiming {
    int32_t threads = 0;
    double msPerStep = 0;   // median llama_decode time of one step of `rows` tokens
    double estimateMs = 0;  // with the JavaScript allowance: what a served step is expected to cost
};

/** What the calibration times and how it weighs the JavaScript threads that share the cores. */
struct CalibrationSpec {
    int32_t rows = 1;        // tokens per timed step, one per sequence 0..rows-1 (clipped to n_batch)
    int32_t maxThreads = 1;  // the most compute threads tried
    int32_t slotContext = 0; // positions a slot may hold; the history is at most half of it
    int32_t cores = 1;       // cores this loop may use
    // JavaScript work per served step (the wake-ups of the worker and main threads) and per token it
    // forwards (event, SSE frame, socket write): on a 2-core Zen 5 the main thread spends 13-15 us a
    // token at 8 and 64 streams (per-thread schedstat); the default allows about twice that.
    double jsStepMs = 0.025;
    double jsTokenMs = 0.025;
    int32_t poll = 0;
    bool persistent = true;  // time persistent pools (ComputeThreads), as the loop then decodes on one
};

struct ThreadCalibration {
    int32_t chosen = 0;
    int32_t rows = 0;
    int32_t history = 0;  // positions of history every sequence had when its steps were timed
    double jsMs = 0;      // the JavaScript allowance per step: jsStepMs + jsTokenMs * rows
    std::vector<ThreadTiming> timings;
};

/**
 * Times one decode step of `rows` tokens (one per sequence 0..rows-1, the shape of `rows` streams generating) over a
 * history of up to 128 positions per sequence, at most half the slot context (prefilled once on sequence 0 and copied
 * to the others: attention over the history is much of a small model's step), with 1..maxThreads threads. Then picks
 * the count with the lowest estimate: ms(t) + jsMs when t threads leave no core free (t >= cores: ggml's threads and
 * the JavaScript threads take turns), max(ms(t), jsMs) otherwise (they run side by side). Ties within 3% go to fewer
 * threads. Tries 1..maxThreads when maxThreads <= 8, else 1, 2, 4, ... and maxThreads, the most first (the history is
 * prefilled on its threads), each after 30 ms of warm-up steps; the most is timed again when it did not win (it ran
 * first, beside the process's start-up). The timings come back in increasing thread count. Leaves the context's memory empty; the
 * pools it used (when `persistent`) are appended to `pools`, which must outlive ctx.
 */
ThreadCalibration calibrateThreads(llama_context * ctx, const CalibrationSpec & spec, std::vector<std::unique_ptr<ComputeThreads>> & pools);

}  // namespace hearth
