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

ThreadCalibration calibrateThreads(llama_context * ctx, const CalibrationSpec & spec, std::vector<std::unique_ptr<ComputeThreads>> & pools) {
    using Clock = std::chrono::steady_clock;
    ThreadCalibration out;
    const int32_t rows = std::max(1, std::min(spec.rows, (int32_t) llama_n_batch(ctx)));
    out.rows = rows;
    out.jsMs = spec.jsStepMs + spec.jsTokenMs * rows;
    llama_memory_t memory = llama_get_memory(ctx);
    const llama_vocab * vocab = llama_model_get_vocab(llama_get_model(ctx));
    const int32_t nVocab = llama_vocab_n_tokens(vocab);
    const int32_t nBatch = (int32_t) llama_n_batch(ctx);
    auto tokenAt = [&](int32_t i, int32_t pos) { return (llama_token) ((i * 7919 + pos * 104729 + 1) % nVocab); };

    // Warm-up steps for 30 ms (the first candidate's threads are new and the CPU's clocks idle: one step left a
    // 0.2 ms step of a 2-thread candidate timed 30 % slow on a 2-core Zen 5, so stories260K at one slot chose 1
    // thread where 2 serve 1.35x; a large model's one or two steps are warm-up enough), each at the same position,
    // then at least 12 timed steps, on until 48 or 25 ms of them (a tiny model's steps are noisy, a large model's
    // few), never past ~1 s, at positions history..+kSteps.
    constexpr int32_t kMaxWarmup = 400;
    constexpr double kWarmupMs = 30.0;
    constexpr int32_t kMinTimed = 12;
    constexpr int32_t kMaxTimed = 48;
    constexpr double kTimedMs = 25.0;
    constexpr int32_t kHistory = 128;
    // Cells each sequence may use; when all sequences share one stream (--kv-unified, or one sequence),
    // the copied history shares its cells but each row's steps take their own. The history leaves room for the
    // fewest steps (a warm-up position and kMinTimed), the steps take what is left, up to kMaxTimed.
    const int32_t room = (int32_t) llama_n_ctx_seq(ctx);
    const bool shared = room == (int32_t) llama_n_ctx(ctx);
    const int32_t fewestSteps = 1 + kMinTimed;
    out.history = std::max(0, std::min({ kHistory, spec.slotContext / 2, room - (shared ? rows : 1) * fewestSteps }));
    const int32_t kSteps = std::max(1, std::min(1 + kMaxTimed, (room - out.history) / (shared ? rows : 1)));

    llama_batch batch = llama_batch_init(std::max(rows, std::min(out.history, nBatch)), 0, 1);
    // Prefills positions 0..history-1 of sequence 0 and copies them to sequences 1..rows-1.
    auto buildHistory = [&]() {
        llama_memory_clear(memory, true);
        for (int32_t p0 = 0; p0 < out.history; p0 += nBatch) {
            batch.n_tokens = std::min(nBatch, out.history - p0);
            for (int32_t j = 0; j < batch.n_tokens; j++) {
                batch.token[j] = tokenAt(0, p0 + j);
                batch.pos[j] = p0 + j;
                batch.n_seq_id[j] = 1;
                batch.seq_id[j][0] = 0;
                batch.logits[j] = 0;
            }
            if (llama_decode(ctx, batch) != 0) {
                return false;
            }
        }
        for (int32_t s = 1; s < rows && out.history > 0; s++) {
            llama_memory_seq_cp(memory, 0, s, -1, -1);
        }
        return true;
    };
    auto stepAt = [&](int32_t pos) {
        batch.n_tokens = rows;
        for (int32_t i = 0; i < rows; i++) {
            batch.token[i] = tokenAt(i, pos);
            batch.pos[i] = pos;
            batch.n_seq_id[i] = 1;
            batch.seq_id[i][0] = i;
            batch.logits[i] = 1;
        }
        return llama_decode(ctx, batch) == 0;
    };

    std::vector<int32_t> candidates;
    const int32_t maxThreads = std::max(1, spec.maxThreads);
    for (int32_t t = 1; t <= maxThreads; t = maxThreads <= 8 ? t + 1 : t * 2) {
        candidates.push_back(t);
    }
    if (candidates.back() != maxThreads) {
        candidates.push_back(maxThreads);
    }
    // The most threads first: the history is prefilled on the first candidate's threads (for a large model on many
    // cores, 1 thread would make that prefill the longest part of the load).
    std::reverse(candidates.begin(), candidates.end());
    bool historyReady = false;
    // Times `t` threads: the median step, or a negative number when a step failed.
    auto timeThreads = [&](int32_t t) -> double {
        std::unique_ptr<ComputeThreads> owned;
        ComputeThreads * pool = nullptr;
        for (auto & p : pools) {
            if (p->threads() == t) {
                pool = p.get();
            }
        }
        if (spec.persistent && pool == nullptr) {
            std::string why;
            owned = ComputeThreads::create(t, t, spec.poll, why);
            pool = owned.get();
        }
        if (pool) {
            pool->attach(ctx);
        } else {
            llama_set_n_threads(ctx, t, t);
        }
        // Back to the bare history: drop the previous candidate's steps, or (memory that cannot drop a
        // tail, e.g. recurrent state) build it again on this candidate's threads.
        bool ok = historyReady && llama_memory_seq_rm(memory, -1, out.history, -1);
        ok = ok || buildHistory();
        historyReady = ok;
        std::vector<double> ms;
        const auto began = Clock::now();
        double warmupMs = 0;
        double timedMs = 0;
        bool warm = false;
        int32_t warmups = 0;
        for (int32_t k = 0; ok && k < kSteps; k++) {
            const auto s = Clock::now();
            ok = stepAt(out.history + k);
            const double took = std::chrono::duration<double, std::milli>(Clock::now() - s).count();
            if (warm) {
                ms.push_back(took);
                timedMs += took;
            } else {
                warmupMs += took;
                warm = ++warmups >= kMaxWarmup || warmupMs >= kWarmupMs;
                // Warm-up steps take the same position again (its cells dropped), so they cost no cells; memory that
                // cannot drop a tail (recurrent state) warms up no further.
                if (!warm && ok) {
                    if (llama_memory_seq_rm(memory, -1, out.history + k, -1)) {
                        k--;
                    } else {
                        warm = true;
                    }
                }
            }
            if ((int32_t) ms.size() >= kMinTimed && timedMs >= kTimedMs) {
                break;
            }
            if (ms.size() >= 3 && std::chrono::duration<double, std::milli>(Clock::now() - began).count() > 1000.0) {
                break;
            }
        }
        if (pool) {
            pool->detach();
        }
        if (owned) {
            pools.push_back(std::move(owned));
        }
        if (!ok || ms.empty()) {
            historyReady = false;
            return -1;
        }
        return medianOf(ms);
    };
    auto estimateOf = [&](int32_t t, double msPerStep) {
        return t >= spec.cores ? msPerStep + out.jsMs : std::max(msPerStep, out.jsMs);
    };
    for (int32_t t : candidates) {
        const double msPerStep = timeThreads(t);
        if (msPerStep >= 0) {
            out.timings.push_back(ThreadTiming { t, msPerStep, estimateOf(t, msPerStep) });
        }
    }
    // In order of thread count: ties (within 3%) go to fewer threads, the same pace with a core left for everything else.
    auto choose = [&]() {
        std::vector<ThreadTiming> byThreads = out.timings;
        std::sort(byThreads.begin(), byThreads.end(), [](const ThreadTiming & a, const ThreadTiming & b) { return a.threads < b.threads; });
        int32_t chosen = maxThreads;
        double best = -1;
        for (const auto & timing : byThreads) {
            if (best < 0 || timing.estimateMs < best * 0.97) {
                best = timing.estimateMs;
                chosen = timing.threads;
            }
        }
        return chosen;
    };
    // The first candidate ran first: beside the process's own start-up, on new threads. When it did not win, it is
    // timed once more and the better of its two medians counts (a 2-core Zen 5 timed a 0.16 ms step at 0.22 in about
    // one load of six, and stories260K at one slot then chose 1 thread where 2 serve 1.35-1.44x).
    out.chosen = choose();
    if (!out.timings.empty() && out.timings.front().threads == candidates.front() && out.chosen != candidates.front()) {
        ThreadTiming & first = out.timings.front();
        const double again = timeThreads(first.threads);
        if (again >= 0 && again < first.msPerStep) {
            first.msPerStep = again;
            first.estimateMs = estimateOf(first.threads, again);
            out.chosen = choose();
        }
    }
    llama_memory_clear(memory, true);
    llama_batch_free(batch);
    std::sort(out.timings.begin(), out.timings.end(), [](const ThreadTiming & a, const ThreadTiming & b) { return a.threads < b.threads; });
    return out;
}

}  // namespace hearth
