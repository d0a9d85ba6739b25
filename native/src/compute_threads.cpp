#include "compute_threads.h"

#include <algorithm>
#include <chrono>

#include "ggml-backend.h"
#include "ggml-cpu.h"

namespace hearth {

namespace {

using NewFn = ggml_threadpool * (*) (ggml_threadpool_params *);
using FreeFn = void (*)(ggml_threadpool *);

/** The CPU backend's threadpool entry points (the backend is a dlopen'ed module, so through its registry). */
bool threadpoolApi(NewFn & make, FreeFn & release) {
    ggml_backend_dev_t dev = ggml_backend_dev_by_type(GGML_BACKEND_DEVICE_TYPE_CPU);
    if (dev == nullptr) {
        return false;
    }
    ggml_backend_reg_t reg = ggml_backend_dev_backend_reg(dev);
    make = (NewFn) ggml_backend_reg_get_proc_address(reg, "ggml_threadpool_new");
    release = (FreeFn) ggml_backend_reg_get_proc_address(reg, "ggml_threadpool_free");
    return make != nullptr && release != nullptr;
}

double medianOf(std::vector<double> v) {
    std::sort(v.begin(), v.end());
    return v.empty() ? 0.0 : v[v.size() / 2];
}

}  // namespace

std::unique_ptr<ComputeThreads> ComputeThreads::create(int32_t threads, int32_t threadsBatch, int32_t poll, std::string & why) {
    NewFn make = nullptr;
    FreeFn release = nullptr;
    if (!threadpoolApi(make, release)) {
        why = "the ggml CPU backend does not export ggml_threadpool_new";
        return nullptr;
    }
    std::unique_ptr<ComputeThreads> self(new ComputeThreads());
    self->free_ = release;
    self->threads_ = threads;
    self->threadsBatch_ = threadsBatch;
    ggml_threadpool_params tpp = ggml_threadpool_params_default(threads);
    tpp.poll = (uint32_t) std::clamp(poll, 0, 100);
    ggml_threadpool_params tppBatch = ggml_threadpool_params_default(threadsBatch);
    tppBatch.poll = tpp.poll;
    // Each pool must match its n_threads exactly (llama.cpp's common_threadpools does the same).
    if (!ggml_threadpool_params_match(&tpp, &tppBatch)) {
        self->poolBatch_ = make(&tppBatch);
        if (self->poolBatch_ == nullptr) {
            why = "ggml_threadpool_new failed for " + std::to_string(threadsBatch) + " threads";
            return nullptr;
        }
        tpp.paused = true;
    }
    self->pool_ = make(&tpp);
    if (self->pool_ == nullptr) {
        why = "ggml_threadpool_new failed for " + std::to_string(threads) + " threads";
        return nullptr;  // the destructor frees poolBatch_
    }
    return self;
}

void ComputeThreads::attach(llama_context * ctx) {
    llama_set_n_threads(ctx, threads_, threadsBatch_);
    llama_attach_threadpool(ctx, pool_, poolBatch_);
    ctx_ = ctx;
}

void ComputeThreads::detach() {
    if (ctx_ != nullptr) {
        llama_detach_threadpool(ctx_);
        ctx_ = nullptr;
    }
}

ComputeThreads::~ComputeThreads() {
    detach();
    if (free_ != nullptr) {
        if (pool_ != nullptr) {
            free_(pool_);
        }
        if (poolBatch_ != nullptr) {
            free_(poolBatch_);
        }
    }
}

ThreadCalibration calibrateThreads(llama_context * ctx, int32_t rows, int32_t maxThreads, int32_t cores, double jsStepMs, int32_t poll, bool persistent,
                                   std::vector<std::unique_ptr<ComputeThreads>> & pools) {
    using Clock = std::chrono::steady_clock;
    ThreadCalibration out;
    rows = std::max(1, std::min(rows, (int32_t) llama_n_batch(ctx)));
    out.rows = rows;
    llama_memory_t memory = llama_get_memory(ctx);
    const llama_vocab * vocab = llama_model_get_vocab(llama_get_model(ctx));
    const int32_t nVocab = llama_vocab_n_tokens(vocab);
    llama_batch batch = llama_batch_init(rows, 0, 1);
    // Positions 0..depth-1 of every sequence: a short history so attention is not trivially empty.
    constexpr int32_t kDepth = 4;
    auto stepAt = [&](int32_t pos) {
        batch.n_tokens = rows;
        for (int32_t i = 0; i < rows; i++) {
            batch.token[i] = (llama_token) ((i * 7919 + pos * 104729 + 1) % nVocab);
            batch.pos[i] = pos;
            batch.n_seq_id[i] = 1;
            batch.seq_id[i][0] = i;
            batch.logits[i] = 1;
        }
        return llama_decode(ctx, batch) == 0;
    };
    std::vector<int32_t> candidates;
    maxThreads = std::max(1, maxThreads);
    for (int32_t t = 1; t <= maxThreads; t = maxThreads <= 8 ? t + 1 : t * 2) {
        candidates.push_back(t);
    }
    if (candidates.back() != maxThreads) {
        candidates.push_back(maxThreads);
    }
    for (int32_t t : candidates) {
        std::string why;
        std::unique_ptr<ComputeThreads> pool = persistent ? ComputeThreads::create(t, t, poll, why) : nullptr;
        if (pool) {
            pool->attach(ctx);
        } else {
            llama_set_n_threads(ctx, t, t);
        }
        std::vector<double> ms;
        const auto began = Clock::now();
        bool ok = true;
        // One warm-up step, then at least 3 timed ones and at most ~1 s of them.
        for (int32_t k = 0; ok && k < 1 + 12; k++) {
            const auto s = Clock::now();
            ok = stepAt(k % kDepth);
            const double took = std::chrono::duration<double, std::milli>(Clock::now() - s).count();
            if (k > 0) {
                ms.push_back(took);
            }
            if ((k + 1) % kDepth == 0) {
                llama_memory_clear(memory, true);
            }
            if (k >= 3 && std::chrono::duration<double, std::milli>(Clock::now() - began).count() > 1000.0) {
                break;
            }
        }
        llama_memory_clear(memory, true);
        if (pool) {
            pool->detach();
            pools.push_back(std::move(pool));
        }
        if (!ok || ms.empty()) {
            continue;
        }
        ThreadTiming timing;
        timing.threads = t;
        timing.msPerStep = medianOf(ms);
        timing.estimateMs = t >= cores ? timing.msPerStep + jsStepMs : std::max(timing.msPerStep, jsStepMs);
        out.timings.push_back(timing);
    }
    llama_batch_free(batch);
    out.chosen = std::max(1, maxThreads);
    double best = -1;
    for (const auto & timing : out.timings) {
        // Ties (within 3%) go to fewer threads: the same pace with a core left for everything else.
        if (best < 0 || timing.estimateMs < best * 0.97) {
            best = timing.estimateMs;
            out.chosen = timing.threads;
        }
    }
    return out;
}

}  // namespace hearth
