#include "slot_loop.h"
#include "thread_name.h"

#include <algorithm>
#include <chrono>
#include <cstdlib>
#include <thread>

#include "batch_row.h"
#include "live_loops.h"
#include "model_kind.h"
#include "llama_runtime.h"
#include "step_budget.h"
#include "token_logprobs.h"

namespace hearth {

namespace {

/**
 * With one KV stream per slot (kvUnified = false), llama.cpp only puts consecutive sequence ids into one
 * micro-batch, so a gap between busy slots costs an extra pass over the weights on every step (measured:
 * 4 jobs on slots 0,2,4,6 of 8 run at half the speed of 4 jobs on slots 0-3). compact() closes gaps by
 * copying a job's KV stream; slot choice avoids needing that unless a gap buys this many reused tokens.
 */
constexpr int32_t kGapPenaltyTokens = 64;

/** Distinct grammars kept parsed per loop (a few schemas are typical; each template is small). */
constexpr size_t kGrammarCacheSize = 32;

}  // namespace

SlotLoop::SlotLoop(LoopOptions options, EventSink sink)
    : options_(std::move(options)), sink_(std::move(sink)), pacer_(options_.prefillStepPercent / 100.0) {}

SlotLoop::~SlotLoop() {
    requestStop(true);
    join();
}

void SlotLoop::start() {
    thread_ = std::thread([this] { run(); });
}

bool SlotLoop::submit(JobSpec job, SubmitRefusal & refusal) {
    {
        std::lock_guard<std::mutex> lock(mutex_);
        if (stopRequested_) {
            refusal = { "engine_disposed", "the engine is disposed" };
            return false;
        }
        if (!ready_) {
            refusal = { "engine_not_ready", "the model is not loaded yet" };
            return false;
        }
        if (embeddingsOnly_) {
            refusal = { "model_embeddings_only", "the model is an embedding model: it computes embeddings, it does not generate" };
            return false;
        }
        if (reserved_ >= 2 * options_.slots) {
            refusal = { "slots_busy", "all slots are busy" };
            return false;
        }
        if (job.prompt.empty()) {
            refusal = { "empty_prompt", "the prompt has no tokens" };
            return false;
        }
        if ((int64_t) job.prompt.size() + 1 > contextSize_) {
            refusal = { "context_length_exceeded", "the prompt (" + std::to_string(job.prompt.size()) +
                        " tokens) does not fit the slot context of " + std::to_string(contextSize_) + " tokens" };
            return false;
        }
        for (llama_token t : job.prompt) {
            if (t < 0 || t >= vocabSize_) {
                refusal = { "invalid_token", "token id " + std::to_string(t) + " is outside the vocabulary" };
                return false;
            }
        }
        reserved_++;
        Command c;
        c.jobId = job.id;
        c.job = std::move(job);
        inbox_.push_back(std::move(c));
    }
    wake_.notify_one();
    return true;
}

void SlotLoop::cancel(uint32_t jobId) {
    Command c;
    c.isCancel = true;
    c.jobId = jobId;
    post(std::move(c));
}

void SlotLoop::yieldSlot(uint32_t jobId) {
    Command c;
    c.isYield = true;
    c.jobId = jobId;
    post(std::move(c));
}

void SlotLoop::post(Command && c) {
    {
        std::lock_guard<std::mutex> lock(mutex_);
        if (stopRequested_) {
            return;  // every job is being cancelled anyway
        }
        inbox_.push_back(std::move(c));
    }
    wake_.notify_one();
}

void SlotLoop::requestStop(bool abortDecode) {
    {
        std::lock_guard<std::mutex> lock(mutex_);
        stopRequested_ = true;
    }
    if (abortDecode) {
        abortDecode_.store(true);
    }
    wake_.notify_one();
}

LoopStats SlotLoop::stats() const {
    return counters_.snapshot();
}

void SlotLoop::join() {
    joinThread();
    unregisterLiveLoop(this);
}

void SlotLoop::joinThread() {
    std::lock_guard<std::mutex> lock(joinMutex_);
    if (thread_.joinable()) {
        thread_.join();
    }
}

// ---------------------------------------------------------------------------------------------------
// Loop thread

void SlotLoop::run() {
    quietLogsOnThisThreadWhen(&abortDecode_);
    // The persistent ggml compute threads that load() creates take this name; the loop thread is renamed after.
    nameThisThread("hearth-compute");
    std::string error;
    const bool loaded = load(error);
    nameThisThread("hearth-loop");
    if (!loaded) {
        unload();
        LoopEvent failed;
        failed.kind = EventKind::LoadFailed;
        failed.text = error;
        events_.push_back(std::move(failed));
        LoopEvent gone;
        gone.kind = EventKind::Disposed;
        events_.push_back(std::move(gone));
        flushEvents();
        return;
    }
    registerLiveLoop(this);
    {
        std::lock_guard<std::mutex> lock(mutex_);
        ready_ = true;
    }
    LoopEvent ready;
    ready.kind = EventKind::Ready;
    ready.contextSize = contextSize_;
    ready.contextTotal = ctx_ != nullptr ? (int32_t) llama_n_ctx(ctx_) : 0;
    ready.embeddingsOnly = embeddingsOnly_;
    counters_.kvCellsTotal.store((uint64_t) ready.contextTotal, std::memory_order_relaxed);
    ready.batchSize = nBatch_;
    ready.vocabSize = vocabSize_;
    ready.threads = threads_;
    ready.threadPool = computeThreads_ != nullptr;
    ready.cpuBackend = cpuBackendLibrary();
    ready.gpuLayers = gpuLayers_;
    ready.modelLayers = modelLayers_;
    if (gpu_ != nullptr) {
        ready.gpuDevices.push_back(describeDevice(gpu_));
    }
    for (const auto & t : calibration_.timings) {
        ready.calibration.insert(ready.calibration.end(), { (double) t.threads, t.msPerStep, t.estimateMs });
    }
    if (!calibration_.timings.empty()) {
        ready.calibrationStep = { (double) calibration_.rows, (double) calibration_.history, calibration_.jsMs };
    }
    events_.push_back(std::move(ready));
    flushEvents();

    std::vector<Command> commands;
    while (true) {
        bool stop = false;
        {
            std::unique_lock<std::mutex> lock(mutex_);
            wake_.wait(lock, [&] { return stopRequested_ || !inbox_.empty() || anyBusy() || !waiting_.empty() || !parked_.empty(); });
            commands.swap(inbox_);
            stop = stopRequested_;
        }
        const auto turnStarted = std::chrono::steady_clock::now();
        apply(commands);
        commands.clear();
        if (!stop) {
            schedule();
        }
        publishKvUse();
        if (stop) {
            break;
        }
        if (anyBusy()) {
            shareKind_ = ShareKind::None;
            step();
            publishKvUse();
            const int32_t rows = batch_.n_tokens;
            flushEvents();
            profile_.lap(StepProfile::Emit);
            profile_.end(rows, profile_.enabled() ? llama_perf_context(ctx_).n_reused : 0);
            if (shareKind_ != ShareKind::None) {
                shareStep(std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - turnStarted).count(), shareKind_ == ShareKind::WithBatch);
            }
        } else {
            flushEvents();
        }
    }

    for (auto & slot : slots_) {
        if (slot.busy) {
            finish(slot, "cancelled", false);
        }
    }
    while (!parked_.empty()) {
        const Slot & p = parked_.front();
        cancelWaiting(p.jobId, p.promptSize, p.cachedTokens, p.generated);
        parked_.pop_front();
    }
    while (!waiting_.empty()) {
        cancelWaiting(waiting_.front().id, (int32_t) waiting_.front().prompt.size(), 0, 0);
        waiting_.pop_front();
    }
    counters_.parked.store(0, std::memory_order_relaxed);
    flushEvents();
    unload();
    LoopEvent gone;
    gone.kind = EventKind::Disposed;
    events_.push_back(std::move(gone));
    flushEvents();
}

bool SlotLoop::load(std::string & error) {
    error = ensureLlamaRuntime(options_.backendDir);
    if (!error.empty()) {
        return false;
    }
    // GPU offload: every layer up to gpuLayers on the first GPU of the loaded backend, nothing split.
    ggml_backend_dev_t gpu = nullptr;
    if (options_.gpuLayers != 0) {
        error = ensureGpuBackend(options_.gpuBackend, gpu);
        if (!error.empty()) {
            return false;
        }
    }
    ggml_backend_dev_t devices[2] = { gpu, nullptr };
    llama_model_params mp = llama_model_default_params();
    mp.n_gpu_layers = gpu == nullptr ? 0 : (options_.gpuLayers < 0 ? 9999 : options_.gpuLayers);
    if (gpu != nullptr) {
        mp.devices = devices;
        mp.split_mode = LLAMA_SPLIT_MODE_NONE;
        mp.main_gpu = 0;
    }
    mp.use_extra_bufts = options_.weightRepack;
    // A stop requested while a big model loads (worker torn down) ends the load early.
    mp.progress_callback = [](float, void * data) { return !static_cast<std::atomic<bool> *>(data)->load(); };
    mp.progress_callback_user_data = &abortDecode_;
    model_ = llama_model_load_from_file(options_.modelPath.c_str(), mp);
    if (model_ == nullptr) {
        if (abortDecode_.load()) {
            error = "the engine was disposed while the model was loading";
            return false;
        }
        const std::string why = lastLlamaErrorOnThisThread();
        error = "llama.cpp could not load the model file " + options_.modelPath + (why.empty() ? "" : ": " + why);
        return false;
    }
    if (!llama_model_has_decoder(model_) || llama_model_has_encoder(model_)) {
        error = "the model is an encoder-decoder (or encoder-only seq2seq) model, which Hearth does not serve";
        return false;
    }
    if (servesEmbeddingsOnly(model_)) {
        // A BERT-family encoder: no generation context (it has no output head); embed() makes its own context.
        // Inputs are held to the model's own positions (its position embeddings end there).
        embeddingsOnly_ = true;
        vocab_ = llama_model_get_vocab(model_);
        modelLayers_ = llama_model_n_layer(model_);
        threads_ = options_.threads;
        std::lock_guard<std::mutex> lock(mutex_);
        contextSize_ = std::min(options_.contextSize, trainedContextLength(model_));
        vocabSize_ = llama_vocab_n_tokens(vocab_);
        return true;
    }

    const int32_t slots = std::max(1, options_.slots);
    llama_context_params cp = llama_context_default_params();
    cp.n_ctx = (uint32_t) options_.contextSize * (uint32_t) slots;
    cp.n_seq_max = (uint32_t) slots;
    cp.n_batch = (uint32_t) std::max(options_.batchSize, slots);
    cp.n_ubatch = std::min<uint32_t>(cp.n_batch, 512);
    cp.n_threads = options_.threads;
    cp.n_threads_batch = options_.threadsBatch;
    cp.kv_unified = options_.kvUnified;
    cp.no_perf = true;
    cp.abort_callback = abortWhenFlagSet;
    cp.abort_callback_data = &abortDecode_;
    ctx_ = llama_init_from_model(model_, cp);
    if (ctx_ == nullptr) {
        const std::string why = lastLlamaErrorOnThisThread();
        error = "llama.cpp could not create a context of " + std::to_string(cp.n_ctx) + " tokens" + (why.empty() ? "" : ": " + why);
        return false;
    }
    vocab_ = llama_model_get_vocab(model_);
    modelLayers_ = llama_model_n_layer(model_);
    gpuLayers_ = gpu == nullptr ? 0 : std::min(mp.n_gpu_layers, modelLayers_ + 1);
    gpu_ = gpu;
    grammars_ = std::make_unique<GrammarCache>(kGrammarCacheSize);
    memory_ = llama_get_memory(ctx_);
    nBatch_ = (int32_t) llama_n_batch(ctx_);
    batch_ = llama_batch_init(nBatch_, 0, 1);
    batchAllocated_ = true;
    setUpComputeThreads(slots);
    int32_t samplerThreads = options_.samplerThreads;
    if (samplerThreads <= 0 && std::getenv("HEARTH_SAMPLER_THREADS") != nullptr) {
        samplerThreads = std::atoi(std::getenv("HEARTH_SAMPLER_THREADS"));  // a benchmark's A/B knob (bench:gpu)
    }
    if (samplerThreads <= 0) {
        const int32_t cores = (int32_t) std::max(1u, std::thread::hardware_concurrency());
        samplerThreads = gpu_ != nullptr ? std::min(8, std::max(1, cores / 2)) : 1;
    }
    if (samplerThreads > 1 && slots >= (int32_t) kParallelSampleRows) {
        rowPool_ = std::make_unique<RowPool>(std::min(samplerThreads, slots));
    }

    canCompact_ = !options_.kvUnified && slots > 1 && !llama_model_is_recurrent(model_) && !llama_model_is_hybrid(model_);
    if (!llama_model_is_recurrent(model_) && !llama_model_is_hybrid(model_) && options_.promptCacheMiB > 0) {
        promptCache_ = std::make_unique<PromptCache>((size_t) options_.promptCacheMiB << 20);
    }
    const int32_t perSeq = options_.kvUnified ? options_.contextSize : (int32_t) llama_n_ctx_seq(ctx_);
    slots_.resize(slots);
    for (int32_t i = 0; i < slots; i++) {
        slots_[i].seq = i;
    }
    std::lock_guard<std::mutex> lock(mutex_);
    contextSize_ = std::min(options_.contextSize, perSeq);
    vocabSize_ = llama_vocab_n_tokens(vocab_);
    return true;
}

void SlotLoop::setUpComputeThreads(int32_t slots) {
    threads_ = options_.threads;
    int32_t threadsBatch = options_.threadsBatch;
    if (options_.calibrateCores > 0 && options_.threads > 1) {
        CalibrationSpec spec;
        spec.rows = slots;
        spec.maxThreads = options_.threads;
        spec.slotContext = options_.contextSize;
        spec.cores = options_.calibrateCores;
        spec.jsStepMs = std::max(0.0, options_.calibrateJsStepMs);
        spec.jsTokenMs = std::max(0.0, options_.calibrateJsTokenMs);
        spec.poll = options_.threadPoll;
        spec.persistent = options_.persistentThreads;
        calibration_ = calibrateThreads(ctx_, spec, computePools_);
        threadsBatch = threadsBatch == threads_ ? calibration_.chosen : threadsBatch;
        threads_ = calibration_.chosen;
    }
    llama_set_n_threads(ctx_, threads_, threadsBatch);
    if (!options_.persistentThreads) {
        return;
    }
    for (auto & pool : computePools_) {
        if (pool->threads() == threads_ && threadsBatch == threads_) {
            computeThreads_ = pool.get();  // the calibration's pool of the chosen size
        }
    }
    if (computeThreads_ == nullptr) {
        std::string why;
        std::unique_ptr<ComputeThreads> pool = ComputeThreads::create(threads_, threadsBatch, options_.threadPoll, why);
        if (!pool) {
            return;  // ggml's per-decode threads
        }
        computeThreads_ = pool.get();
        computePools_.push_back(std::move(pool));
    }
    computeThreads_->attach(ctx_);
}

void SlotLoop::unload() {
    rowPool_.reset();
    for (auto & slot : slots_) {
        slot.sampler.reset();
        slot.scanner.reset();
    }
    grammars_.reset();
    utf8Table_.reset();
    promptCache_.reset();
    if (batchAllocated_) {
        llama_batch_free(batch_);
        batchAllocated_ = false;
    }
    if (computeThreads_) {
        computeThreads_->detach();
    }
    if (ctx_ != nullptr) {
        llama_free(ctx_);
        ctx_ = nullptr;
    }
    computeThreads_ = nullptr;
    computePools_.clear();
    if (model_ != nullptr) {
        llama_model_free(model_);
        model_ = nullptr;
    }
}

void SlotLoop::publishKvUse() {
    // A busy slot's cache holds the cells of its job's sequence (positions 0..size-1); an idle slot's cache is a
    // reusable prefix that the next job may overwrite, so it counts as free (as vLLM counts evictable prefix blocks).
    uint64_t used = 0;
    for (const auto & slot : slots_) {
        if (slot.busy) {
            used += slot.cache.size();
        }
    }
    counters_.kvCellsUsed.store(used, std::memory_order_relaxed);
}

bool SlotLoop::anyBusy() const {
    for (const auto & slot : slots_) {
        if (slot.busy) {
            return true;
        }
    }
    return false;
}

void SlotLoop::apply(std::vector<Command> & commands) {
    for (auto & c : commands) {
        if (c.isYield) {
            for (auto & slot : slots_) {
                if (slot.busy && slot.jobId == c.jobId) {
                    slot.yields = true;
                }
            }
            continue;
        }
        if (!c.isCancel) {
            waiting_.push_back(std::move(c.job));  // schedule() places it, before the next step
            continue;
        }
        bool found = false;
        for (auto & slot : slots_) {
            if (slot.busy && slot.jobId == c.jobId) {
                finish(slot, "cancelled", false);
                found = true;
                break;
            }
        }
        for (auto it = waiting_.begin(); !found && it != waiting_.end(); ++it) {
            if (it->id == c.jobId) {
                cancelWaiting(it->id, (int32_t) it->prompt.size(), 0, 0);
                waiting_.erase(it);
                found = true;
                break;
            }
        }
        for (auto it = parked_.begin(); !found && it != parked_.end(); ++it) {
            if (it->jobId == c.jobId) {
                cancelWaiting(it->jobId, it->promptSize, it->cachedTokens, it->generated);
                parked_.erase(it);
                counters_.parked.store(parked_.size(), std::memory_order_relaxed);
                found = true;
                break;
            }
        }
    }
}

bool SlotLoop::hasFreeSlot() const {
    for (const auto & slot : slots_) {
        if (!slot.busy) {
            return true;
        }
    }
    return false;
}

void SlotLoop::schedule() {
    if (waiting_.empty() && parked_.empty()) {
        return;
    }
    bool interactiveWaits = false;
    for (auto it = waiting_.begin(); it != waiting_.end();) {
        if (it->batch) {
            ++it;
            continue;
        }
        if (!hasFreeSlot()) {
            // The newest batch job yields (the least work of its kind is held up), else the newest job marked by
            // yieldSlot(); none: wait for a slot to free.
            Slot * victim = nullptr;
            for (auto & slot : slots_) {
                if (slot.busy && slot.batch && (victim == nullptr || slot.serial > victim->serial)) {
                    victim = &slot;
                }
            }
            for (auto & slot : slots_) {
                if (slot.busy && slot.yields && (victim == nullptr || (!victim->batch && slot.serial > victim->serial))) {
                    victim = &slot;
                }
            }
            if (victim == nullptr) {
                interactiveWaits = true;
                break;
            }
            park(*victim);
        }
        JobSpec job = std::move(*it);
        it = waiting_.erase(it);
        assign(std::move(job));
    }
    if (interactiveWaits) {
        return;
    }
    while (!parked_.empty() && hasFreeSlot()) {
        Slot p = std::move(parked_.front());
        parked_.pop_front();
        resume(std::move(p));
    }
    counters_.parked.store(parked_.size(), std::memory_order_relaxed);
    while (!waiting_.empty() && hasFreeSlot()) {
        JobSpec job = std::move(waiting_.front());
        waiting_.pop_front();
        assign(std::move(job));
    }
}

void SlotLoop::park(Slot & slot) {
    Slot p;
    std::swap(p, slot);
    // The slot keeps its sequence and KV: a prefix cache of the parked job's tokens, saved to the prompt cache
    // (placeKv) when the interactive job takes it.
    slot.seq = p.seq;
    slot.cache = p.cache;
    slot.partition = p.partition;
    slot.lastUsed = ++clock_;
    if (p.generating) {
        // Everything decoded so far, then the sampled token that waits to be decoded: evaluated again on resume
        // (reused from the KV where it is kept), after which sampling goes on with the same sampler.
        p.prompt = p.cache;
        p.prompt.push_back(p.pending);
        p.resumed = true;
        p.generating = false;
    }
    p.promptPos = 0;
    p.chunk = 0;
    p.outputIndex = -1;
    p.yields = false;
    parked_.push_back(std::move(p));
    counters_.preemptions.fetch_add(1, std::memory_order_relaxed);
    counters_.parked.store(parked_.size(), std::memory_order_relaxed);
}

void SlotLoop::resume(Slot && parked) {
    int32_t reuse = 0;
    Slot & slot = pickSlot(parked.prompt, parked.partition, reuse);
    placeKv(slot, parked.prompt, parked.partition, reuse);
    const int32_t seq = slot.seq;
    std::vector<llama_token> cache = std::move(slot.cache);
    std::swap(slot, parked);
    slot.seq = seq;
    slot.cache = std::move(cache);
    slot.promptPos = (size_t) reuse;
    slot.rides = ridesWithDecoders(slot);
    slot.lastUsed = ++clock_;
}

void SlotLoop::cancelWaiting(uint32_t jobId, int32_t promptTokens, int32_t cachedTokens, int32_t generated) {
    emitDone(jobId, "cancelled", promptTokens, cachedTokens, generated);
    std::lock_guard<std::mutex> lock(mutex_);
    reserved_--;
}

SlotLoop::Slot & SlotLoop::pickSlot(const std::vector<llama_token> & prompt, const std::string & partition, int32_t & reuse) {
    const int32_t maxReuse = (int32_t) prompt.size() - 1;  // keep one token to evaluate so logits exist
    const int32_t n = (int32_t) slots_.size();
    Slot * best = nullptr;
    int64_t bestScore = 0;
    for (auto & slot : slots_) {
        if (slot.busy) {
            continue;
        }
        int32_t lcp = 0;
        // Another partition's KV is no prefix of this prompt: never compared, reused only as an empty slot.
        const int32_t limit = slot.partition == partition ? std::min<int32_t>((int32_t) slot.cache.size(), maxReuse) : 0;
        while (lcp < limit && slot.cache[lcp] == prompt[lcp]) {
            lcp++;
        }
        int64_t score = lcp;
        if (!options_.kvUnified) {
            const bool left = slot.seq > 0 && slots_[slot.seq - 1].busy;
            const bool right = slot.seq + 1 < n && slots_[slot.seq + 1].busy;
            score -= (int64_t) kGapPenaltyTokens * (1 - (int) left - (int) right);
        }
        if (best == nullptr || score > bestScore || (score == bestScore && slot.lastUsed < best->lastUsed)) {
            best = &slot;
            bestScore = score;
            reuse = lcp;
        }
    }
    return *best;  // submit() admits at most `slots` jobs, so a free slot exists
}

void SlotLoop::assign(JobSpec && job) {
    llama_sampler * grammar = nullptr;
    if (!job.grammar.empty()) {
        std::string error;
        grammar = grammars_->instantiate(vocab_, job.grammar, error);
        if (grammar == nullptr) {
            refuse(job.id, "invalid_grammar", error);
            return;
        }
        if (!utf8Table_) {
            utf8Table_ = std::make_unique<Utf8TokenTable>(vocab_);
        }
    }
    int32_t reuse = 0;
    Slot & slot = pickSlot(job.prompt, job.cachePartition, reuse);
    placeKv(slot, job.prompt, job.cachePartition, reuse);

    slot.busy = true;
    slot.jobId = job.id;
    slot.batch = job.batch;
    slot.resumed = false;
    slot.promptSize = (int32_t) job.prompt.size();
    slot.serial = ++clock_;
    slot.lastUsed = slot.serial;
    slot.cachedTokens = reuse;
    slot.promptPos = (size_t) reuse;
    slot.maxTokens = job.maxTokens;
    slot.generated = 0;
    slot.tokensSinceText = 0;
    slot.generating = false;
    slot.promptSteps = 0;
    slot.sampler = std::make_unique<SlotSampler>(job.sampling, vocab_, contextSize_, job.prompt, grammar, utf8Table_.get());
    slot.topLogprobs = job.topLogprobs;
    slot.pendingLogprobs.clear();
    slot.scanner = std::make_unique<StopScanner>(std::move(job.stops));
    slot.prompt = std::move(job.prompt);
    slot.rides = ridesWithDecoders(slot);
}

void SlotLoop::placeKv(Slot & slot, const std::vector<llama_token> & tokens, const std::string & partition, int32_t & reuse) {
    if (promptCache_ && promptCache_->enabled()) {
        if ((int32_t) slot.cache.size() > reuse) {
            promptCache_->save(ctx_, slot.seq, slot.partition, slot.cache);  // what this slot is about to lose
        }
        std::vector<llama_token> held;
        const int32_t restored =
            promptCache_->restore(ctx_, slot.seq, partition, tokens, reuse, (int32_t) tokens.size() - 1, held);
        if (restored > 0) {
            slot.cache = std::move(held);
            reuse = restored;
            counters_.promptCacheRestores.fetch_add(1, std::memory_order_relaxed);
        } else if (restored < 0) {
            slot.cache.clear();
            reuse = 0;
        }
        counters_.promptCacheLookups.fetch_add(1, std::memory_order_relaxed);
        counters_.promptCacheBytes.store(promptCache_->bytes(), std::memory_order_relaxed);
        counters_.promptCacheEntries.store(promptCache_->entries(), std::memory_order_relaxed);
    }
    if (!llama_memory_seq_rm(memory_, slot.seq, reuse, -1)) {
        // This memory cannot drop a partial sequence (e.g. recurrent state): start from scratch.
        llama_memory_seq_rm(memory_, slot.seq, -1, -1);
        reuse = 0;
    }
    slot.cache.resize(reuse);
    slot.partition = partition;
}

bool SlotLoop::ridesWithDecoders(const Slot & slot) const {
    const size_t left = slot.prompt.size() - slot.promptPos;
    return options_.promptRideTokens > 0 && left <= (size_t) options_.promptRideTokens;
}

void SlotLoop::compact() {
    if (!canCompact_) {
        return;
    }
    const int32_t n = (int32_t) slots_.size();
    int32_t busy = 0;
    for (const auto & slot : slots_) {
        busy += slot.busy ? 1 : 0;
    }
    if (busy == 0 || busy == n) {
        return;
    }
    // The window of `busy` consecutive slots that already holds the most busy ones needs the fewest copies.
    int32_t bestStart = 0;
    int32_t bestInside = -1;
    for (int32_t start = 0; start + busy <= n; start++) {
        int32_t inside = 0;
        for (int32_t i = start; i < start + busy; i++) {
            inside += slots_[i].busy ? 1 : 0;
        }
        if (inside > bestInside) {
            bestInside = inside;
            bestStart = start;
        }
    }
    if (bestInside == busy) {
        return;
    }
    std::vector<Slot *> outside;
    std::vector<Slot *> holes;
    for (int32_t i = 0; i < n; i++) {
        const bool in = i >= bestStart && i < bestStart + busy;
        if (in && !slots_[i].busy) {
            holes.push_back(&slots_[i]);
        } else if (!in && slots_[i].busy) {
            outside.push_back(&slots_[i]);
        }
    }
    for (size_t i = 0; i < outside.size() && i < holes.size(); i++) {
        migrate(*outside[i], *holes[i]);
    }
}

void SlotLoop::migrate(Slot & from, Slot & to) {
    // Queues a copy of the whole stream; llama.cpp performs it at the start of the next llama_decode.
    llama_memory_seq_cp(memory_, from.seq, to.seq, -1, -1);
    counters_.migrations.fetch_add(1, std::memory_order_relaxed);
    const int32_t fromSeq = from.seq;
    const int32_t toSeq = to.seq;
    std::swap(from, to);
    from.seq = fromSeq;
    to.seq = toSeq;
    // `from` is free now and still holds the same tokens: it stays a prefix cache for them, of the same partition.
    from.cache = to.cache;
    from.partition = to.partition;
}

void SlotLoop::step() {
    profile_.begin();
    compact();
    // Batch jobs sit out this step when interactive work would pay for them (batchSitsOut()).
    const bool holdBatch = batchSitsOut();
    // Token budget: one row per generating slot first (they never wait), then prompt chunks, oldest job first.
    int32_t generatingRows = 0;
    std::vector<Slot *> prompting;
    for (auto & slot : slots_) {
        slot.outputIndex = -1;
        slot.chunk = 0;
        slot.held = slot.busy && slot.batch && holdBatch;
        if (!slot.busy || slot.held) {
            continue;
        }
        if (slot.generating) {
            generatingRows++;
        } else {
            prompting.push_back(&slot);
        }
    }
    int32_t budget = stepRowBudget(nBatch_, options_.stepTokenBudget, generatingRows) - generatingRows;
    const int32_t promptCap = budget;
    if (generatingRows > 0) {
        budget = pacer_.promptTokens(budget);
    }
    std::sort(prompting.begin(), prompting.end(), [](const Slot * a, const Slot * b) { return a->serial < b->serial; });
    for (Slot * slot : prompting) {
        const int32_t left = (int32_t) (slot->prompt.size() - slot->promptPos);
        const int32_t most = slot->rides && generatingRows > 0 ? 1 : budget;
        slot->chunk = std::max(0, std::min({most, budget, left}));
        budget -= slot->chunk;
    }

    // Rows in sequence-id order so that consecutive busy slots share one micro-batch.
    batch_.n_tokens = 0;
    auto add = [&](llama_token token, llama_pos pos, llama_seq_id seq, bool output) {
        return addBatchRow(batch_, token, pos, seq, output);
    };
    bool interactiveRows = false;
    bool interactivePrompt = false;
    bool batchRows = false;
    for (auto & slot : slots_) {
        if (!slot.busy || slot.held) {
            continue;
        }
        (slot.batch ? batchRows : interactiveRows) = true;
        interactivePrompt = interactivePrompt || (!slot.batch && slot.chunk > 0);
        if (slot.generating) {
            slot.outputIndex = add(slot.pending, (llama_pos) slot.cache.size(), slot.seq, true);
        } else if (slot.chunk > 0) {
            for (int32_t k = 0; k < slot.chunk; k++) {
                const size_t p = slot.promptPos + k;
                const bool last = p + 1 == slot.prompt.size();
                const int32_t row = add(slot.prompt[p], (llama_pos) (slot.cache.size() + k), slot.seq, last);
                if (last) {
                    slot.outputIndex = row;
                }
            }
        }
    }
    if (batch_.n_tokens == 0) {
        return;
    }

    profile_.lap(StepProfile::Build);
    const bool paced = pacer_.enabled() && generatingRows > 0;
    const auto started = std::chrono::steady_clock::now();
    const int32_t ret = llama_decode(ctx_, batch_);
    if (ret == 0 && paced) {
        const double stepMs = std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - started).count();
        const int32_t promptRows = batch_.n_tokens - generatingRows;
        if (promptRows == 0) {
            pacer_.decodeStep(stepMs);
        } else {
            pacer_.mixedStep(stepMs, promptRows, promptCap);
        }
    }
    counters_.steps.fetch_add(1, std::memory_order_relaxed);
    profile_.lap(StepProfile::Decode);
    if (ret != 0) {
        if (abortDecode_.load()) {
            return;  // stopping: run() cancels every job next
        }
        const std::string message = "llama_decode failed with status " + std::to_string(ret);
        for (auto & slot : slots_) {
            if (slot.busy && (slot.generating || slot.chunk > 0)) {
                fail(slot, "decode_failed", message);
            }
        }
        return;
    }

    for (auto & slot : slots_) {
        if (!slot.busy || slot.held) {
            continue;
        }
        if (slot.generating) {
            slot.cache.push_back(slot.pending);
        } else if (slot.chunk > 0) {
            slot.cache.insert(slot.cache.end(), slot.prompt.begin() + slot.promptPos, slot.prompt.begin() + slot.promptPos + slot.chunk);
            slot.promptPos += slot.chunk;
            slot.promptSteps++;
            counters_.promptTokens.fetch_add((uint64_t) slot.chunk, std::memory_order_relaxed);
        }
    }
    // Wait for the step's results once, here (on a GPU llama_decode only launched it), then sample every output
    // row: rows are independent (each slot owns its sampler), so on a GPU a pool of threads samples them at once;
    // the tokens are then taken in slot order on this thread.
    llama_synchronize(ctx_);
    profile_.lap(StepProfile::Sync);
    // An interactive decode step (solo, or with batch rows: decode or prompt) is accounted once it is over, its
    // whole turn of the loop timed: what the interactive client waits between two tokens.
    shareKind_ = !interactiveRows || interactivePrompt ? ShareKind::None : (batchRows ? ShareKind::WithBatch : ShareKind::Solo);
    sampleRows_.clear();
    for (auto & slot : slots_) {
        if (!slot.busy || slot.outputIndex < 0) {
            continue;
        }
        if (!slot.generating) {
            slot.generating = true;
            if (!slot.resumed) {  // a resumed job reported its prompt before it was parked
                LoopEvent e;
                e.kind = EventKind::Prompt;
                e.job = slot.jobId;
                e.promptTokens = slot.promptSize;
                e.cachedTokens = slot.cachedTokens;
                e.promptSteps = slot.promptSteps;
                events_.push_back(std::move(e));
            }
        }
        slot.logits = llama_get_logits_ith(ctx_, slot.outputIndex);
        sampleRows_.push_back(&slot);
    }
    auto sampleRow = [this](size_t i) {
        Slot & slot = *sampleRows_[i];
        slot.sampleError.clear();
        const int32_t remaining = std::min(slot.maxTokens - slot.generated, contextSize_ - (int32_t) slot.cache.size());
        slot.sampled = slot.logits == nullptr ? -1 : slot.sampler->sample(slot.logits, slot.sampleError, remaining);
    };
    if (rowPool_ && sampleRows_.size() >= kParallelSampleRows) {
        rowPool_->run(sampleRows_.size(), sampleRow);
    } else {
        for (size_t i = 0; i < sampleRows_.size(); i++) {
            sampleRow(i);
        }
    }
    for (Slot * slot : sampleRows_) {
        if (slot->sampled < 0) {
            fail(*slot, "grammar_failed", slot->sampleError.empty() ? "no logits for the slot's output row" : slot->sampleError);
            continue;
        }
        if (slot->topLogprobs >= 0) {
            recordLogprob(*slot, slot->sampled);
        }
        onToken(*slot, slot->sampled);
    }
    profile_.lap(StepProfile::Sample);
}

bool SlotLoop::batchSitsOut() {
    bool interactive = false;
    bool interactivePrompt = false;
    bool batch = false;
    for (const auto & slot : slots_) {
        if (!slot.busy) {
            continue;
        }
        if (slot.batch) {
            batch = true;
        } else {
            interactive = true;
            interactivePrompt = interactivePrompt || !slot.generating;
        }
    }
    if (!interactive) {
        batchCreditMs_ = 0.0;  // batch work alone runs every step, at full speed
        return false;
    }
    if (!batch) {
        return false;
    }
    // An interactive prompt is evaluated without batch rows (its time to first token); decode steps take batch
    // rows while the credit covers what they cost: unmeasured costs are measured first.
    if (interactivePrompt || soloStepMs_ <= 0.0) {
        return true;
    }
    return batchExtraMs_ > 0.0 && batchCreditMs_ < batchExtraMs_;
}

void SlotLoop::shareStep(double stepMs, bool withBatch) {
    constexpr double kWeight = 0.2;  // EMA weight of the newest step
    if (!withBatch) {
        // What an interactive step costs alone on a quiet loop: quick to follow a faster step, slow to follow a slower
        // one (a solo step slowed by the main thread's work for the batch streams, or by other processes, must not
        // raise the allowance the batch rows are measured against).
        const double w = stepMs < soloStepMs_ ? kSoloFollowDown : kSoloFollowUp;
        soloStepMs_ = soloStepMs_ <= 0.0 ? stepMs : soloStepMs_ + w * (stepMs - soloStepMs_);
    } else if (soloStepMs_ > 0.0) {
        const double extra = std::max(0.0, stepMs - soloStepMs_);
        batchExtraMs_ = batchExtraMs_ <= 0.0 ? extra : batchExtraMs_ + kWeight * (extra - batchExtraMs_);
        batchCreditMs_ -= extra;
    }
    // Each interactive decode step may cost kInteractiveSlowdown x its solo time: the rest is the batch jobs' credit.
    batchCreditMs_ = std::min(batchCreditMs_ + (kInteractiveSlowdown - 1.0) * soloStepMs_, 2.0 * batchExtraMs_ + soloStepMs_);
}

void SlotLoop::recordLogprob(Slot & slot, llama_token token) {
    if (llama_vocab_is_eog(vocab_, token)) {
        return;  // not a completion token
    }
    const RawLogprobs raw = rawLogprobs(llama_get_logits_ith(ctx_, slot.outputIndex), vocabSize_, token, slot.topLogprobs);
    TokenLogprob entry;
    entry.piece = piece(token);
    entry.logprob = raw.chosen;
    entry.top.reserve(raw.top.size());
    for (const auto & alt : raw.top) {
        entry.top.push_back(TokenAlternative{ piece(alt.first), alt.second });
    }
    slot.pendingLogprobs.push_back(std::move(entry));
}

void SlotLoop::onToken(Slot & slot, llama_token token) {
    if (llama_vocab_is_eog(vocab_, token)) {
        // Not a completion token (the node-llama-cpp engine does not count it either).
        emitText(slot, slot.scanner->flush());
        finish(slot, "stop", true);
        return;
    }
    slot.generated++;
    slot.tokensSinceText++;
    counters_.generatedTokens.fetch_add(1, std::memory_order_relaxed);
    emitText(slot, slot.scanner->push(piece(token)));
    if (slot.scanner->stopped()) {
        finish(slot, "stop", true, slot.scanner->matched());
        return;
    }
    // The token must be decoded at position cache.size() before the next one can be sampled.
    if (slot.generated >= slot.maxTokens || (int32_t) slot.cache.size() >= contextSize_) {
        emitText(slot, slot.scanner->flush());
        finish(slot, "length", true);
        return;
    }
    slot.pending = token;
}

void SlotLoop::emitText(Slot & slot, std::string text) {
    if (text.empty()) {
        return;
    }
    LoopEvent e;
    e.kind = EventKind::Text;
    e.job = slot.jobId;
    e.text = std::move(text);
    e.tokenCount = slot.tokensSinceText;
    slot.tokensSinceText = 0;
    if (slot.topLogprobs >= 0) {
        e.logprobs.swap(slot.pendingLogprobs);
    }
    events_.push_back(std::move(e));
}

void SlotLoop::finish(Slot & slot, const char * reason, bool keepCache, const std::string & stop) {
    if (!keepCache) {
        llama_memory_seq_rm(memory_, slot.seq, -1, -1);
        slot.cache.clear();
    }
    emitDone(slot.jobId, reason, slot.promptSize, slot.cachedTokens, slot.generated, stop);
    release(slot);
}

void SlotLoop::emitDone(uint32_t jobId, const char * reason, int32_t promptTokens, int32_t cachedTokens, int32_t completionTokens,
                        const std::string & stop) {
    LoopEvent e;
    e.kind = EventKind::Done;
    e.job = jobId;
    e.code = reason;
    e.promptTokens = promptTokens;
    e.cachedTokens = cachedTokens;
    e.completionTokens = completionTokens;
    e.text = stop;
    events_.push_back(std::move(e));
}

void SlotLoop::emitError(uint32_t jobId, const std::string & code, const std::string & message) {
    LoopEvent e;
    e.kind = EventKind::Error;
    e.job = jobId;
    e.code = code;
    e.text = message;
    events_.push_back(std::move(e));
}

void SlotLoop::fail(Slot & slot, const std::string & code, const std::string & message) {
    llama_memory_seq_rm(memory_, slot.seq, -1, -1);
    slot.cache.clear();
    emitError(slot.jobId, code, message);
    release(slot);
}

void SlotLoop::refuse(uint32_t jobId, const std::string & code, const std::string & message) {
    emitError(jobId, code, message);
    std::lock_guard<std::mutex> lock(mutex_);
    reserved_--;
}

void SlotLoop::release(Slot & slot) {
    slot.busy = false;
    slot.batch = false;
    slot.resumed = false;
    slot.topLogprobs = -1;
    slot.pendingLogprobs.clear();
    slot.generating = false;
    slot.prompt.clear();
    slot.prompt.shrink_to_fit();
    slot.sampler.reset();
    slot.scanner.reset();
    slot.lastUsed = ++clock_;
    std::lock_guard<std::mutex> lock(mutex_);
    reserved_--;
}

void SlotLoop::flushEvents() {
    if (events_.empty()) {
        return;
    }
    std::vector<LoopEvent> out;
    out.swap(events_);
    sink_(std::move(out));
}

const std::string & SlotLoop::piece(llama_token token) {
    pieceBuf_.resize(32);
    int32_t n = llama_token_to_piece(vocab_, token, pieceBuf_.data(), (int32_t) pieceBuf_.size(), 0, false);
    if (n < 0) {
        pieceBuf_.resize((size_t) -n);
        n = llama_token_to_piece(vocab_, token, pieceBuf_.data(), (int32_t) pieceBuf_.size(), 0, false);
    }
    pieceBuf_.resize(n > 0 ? (size_t) n : 0);
    return pieceBuf_;
}

llama_model * SlotLoop::model() {
    std::lock_guard<std::mutex> lock(mutex_);
    return ready_ && !stopRequested_ ? model_ : nullptr;
}

}  // namespace hearth
