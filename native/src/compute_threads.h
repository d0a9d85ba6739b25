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

struct ThreadCalibration {
    int32_t chosen = 0;
    int32_t rows = 0;
    std::vector<ThreadTiming> timings;
};

/**
 * Times one decode step of `rows` tokens (one per sequence 0..rows-1, the shape of `rows` streams
 * generating) with 1..maxThreads threads (persistent pools when `persistent`), then picks the count with
 * the lowest estimate: ms(t) + jsStepMs when t threads leave no core free (t >= cores: ggml's threads
 * and the JavaScript threads take turns), max(ms(t), jsStepMs) otherwise (they run side by side).
 * Tries 1..maxThreads when maxThreads <= 8, else 1, 2, 4, ... and maxThreads. Leaves the context's
 * memory empty; the pools it used (when `persistent`) are appended to `pools`, which must outlive ctx.
 */
ThreadCalibration calibrateThreads(llama_context * ctx, int32_t rows, int32_t maxThreads, int32_t cores, double jsStepMs, int32_t poll, bool persistent,
                                   std::vector<std::unique_ptr<ComputeThreads>> & pools);

}  // namespace hearth
