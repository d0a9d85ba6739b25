// The continuous-batching slot loop: one llama.cpp model + context with N slots (llama sequences),
// driven by its own std::thread the way llama-server drives its slots. Each step is one llama_decode
// over all active slots (prompt chunks of new jobs + one token per generating slot), then native
// sampling, stop-string and UTF-8 handling, then one batch of events to the sink.
//
// Threads: the constructor, start(), submit(), cancel(), requestStop() and join() are called by the
// owner (the JavaScript thread); they only touch the mutex-protected inbox and never wait for a step.
// Everything else, including every llama.cpp call, runs on the loop thread. The sink is called on the
// loop thread.
#pragma once

#include <atomic>
#include <deque>
#include <condition_variable>
#include <cstdint>
#include <functional>
#include <memory>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include "compute_threads.h"
#include "row_pool.h"
#include "step_profile.h"
#include "grammar_cache.h"
#include "llama.h"
#include "loop_stats.h"
#include "loop_types.h"
#include "prefill_pacer.h"
#include "prompt_cache.h"
#include "slot_sampler.h"
#include "stop_scanner.h"
#include "utf8_guard.h"

namespace hearth {

/** Why submit() refused a job: a stable code and a human-readable message. */
struct SubmitRefusal {
    std::string code;
    std::string message;
};

class SlotLoop {
public:
    using EventSink = std::function<void(std::vector<LoopEvent> &&)>;

    SlotLoop(LoopOptions options, EventSink sink);
    /** Stops (aborting any decode in flight) and joins the thread if the owner did not. */
    ~SlotLoop();
    SlotLoop(const SlotLoop &) = delete;
    SlotLoop & operator=(const SlotLoop &) = delete;

    /** Starts the loop thread, which loads the model and then reports Ready or LoadFailed. */
    void start();

    /**
     * Queues a job for the next step. Returns a refusal instead when it cannot run; never blocks on a step. The
     * loop holds up to twice its slots: a job without a free slot waits in the loop; an interactive one takes the
     * slot of a running batch job (JobSpec::batch), which is parked and resumed when a slot frees.
     */
    bool submit(JobSpec job, SubmitRefusal & refusal);

    /** Queues a cancel; the job's slot is freed at the next step boundary and it ends with Done(cancelled). */
    void cancel(uint32_t jobId);
    /**
     * Queues a yield (fair share between tenants, decided by the caller): the running job gives its slot to the
     * next job that waits in the loop for one (parked like a batch job, resumed when a slot frees, its answer
     * unchanged). A no-op for a job that is not on a slot by then; the mark lasts until the job is parked.
     */
    void yieldSlot(uint32_t jobId);

    /**
     * Asks the loop to cancel every job, free the context and model, report Disposed and exit.
     * With abortDecode, a llama_decode in flight is aborted too. Idempotent.
     */
    void requestStop(bool abortDecode);

    LoopStats stats() const;

    /**
     * The loaded model, for other contexts on it (the embedder): null before Ready and once a stop was
     * requested. Any thread; the model stays loaded until the loop thread unloads it after requestStop().
     */
    llama_model * model();

    /** Waits for the loop thread to exit. Idempotent. */
    void join();

    /** join() without leaving the process-exit registry; for that registry's own use. */
    void joinThread();

private:
    struct Slot {
        int32_t seq = 0;
        /** Tokens whose K/V this sequence holds, at positions 0..size-1 (the prefix cache). */
        std::vector<llama_token> cache;
        /** The cache partition of the job that left `cache` (JobSpec::cachePartition). */
        std::string partition;
        uint64_t lastUsed = 0;

        bool busy = false;
        uint32_t jobId = 0;
        bool batch = false;     // JobSpec::batch: yields the slot to a waiting interactive job
        bool yields = false;    // yieldSlot(): gives its slot to the next job that waits for one (once)
        bool resumed = false;   // parked once while generating: `prompt` is its tokens so far, Prompt was reported
        int32_t promptSize = 0; // the job's own prompt tokens (reported in Prompt and Done)
        bool held = false;      // a batch job sitting out this step (batchSitsOut())
        uint64_t serial = 0;
        std::vector<llama_token> prompt;
        size_t promptPos = 0;  // next prompt token to evaluate
        int32_t cachedTokens = 0;
        int32_t maxTokens = 0;
        int32_t generated = 0;
        int32_t tokensSinceText = 0;
        bool generating = false;  // prompt done; `pending` waits to be decoded
        llama_token pending = 0;
        std::unique_ptr<SlotSampler> sampler;
        std::unique_ptr<StopScanner> scanner;
        /** -1: the job wants no logprobs. Else entries of tokens whose text is not emitted yet. */
        int32_t topLogprobs = -1;
        std::vector<TokenLogprob> pendingLogprobs;

        // Per step
        int32_t outputIndex = -1;  // batch row whose logits this slot samples from
        const float * logits = nullptr;  // that row's logits, fetched before sampling (step())
        llama_token sampled = -1;        // the token sampled from them (-1: sampleError says why)
        std::string sampleError;
        int32_t chunk = 0;         // prompt tokens in this step's batch
        int32_t promptSteps = 0;   // steps that evaluated some of this job's prompt
        bool rides = false;        // prompt fed one token a step in the generating rows' pass (promptRideTokens)
    };

    struct Command {
        bool isCancel = false;
        bool isYield = false;
        uint32_t jobId = 0;
        JobSpec job;
    };

    void run();
    /** Queues a cancel or yield for the loop thread and wakes it; dropped once a stop was requested (any thread). */
    void post(Command && c);
    bool load(std::string & error);
    void unload();
    /** Thread count (calibrated when asked) and persistent compute threads; after the context exists. */
    void setUpComputeThreads(int32_t slots);
    void apply(std::vector<Command> & commands);
    /**
     * Places waiting jobs on free slots, before each step: interactive jobs first (parking the newest batch job
     * when no slot is free, else the newest job marked by yieldSlot()), then, while no interactive job waits, parked batch jobs (oldest first), then waiting
     * batch jobs, in arrival order.
     */
    void schedule();
    bool hasFreeSlot() const;
    /**
     * Whether batch jobs sit out the next step, so that interactive jobs running beside them keep their speed: while
     * an interactive prompt is evaluated (time to first token), and on decode steps while the credit does not cover
     * what batch rows add: on average a step with interactive rows takes at most kInteractiveSlowdown x an
     * interactive-only step (measured), batch rows using the rest. Batch jobs alone run every step.
     */
    bool batchSitsOut();
    /**
     * Accounts one decode step with interactive rows (`withBatch`: batch rows too) whose turn of the loop took
     * `stepMs` (commands, scheduling, decode, sampling, events: all an interactive token waits for): the measured
     * costs and the credit.
     */
    void shareStep(double stepMs, bool withBatch);
    /** Moves a busy batch job off its slot into parked_; the slot keeps its KV as a prefix cache (saved when reused). */
    void park(Slot & slot);
    /** Puts a parked job back on a free slot: its tokens so far reused from the slot or the prompt cache, the rest evaluated again. */
    void resume(Slot && parked);
    /** Readies a free `slot` for `tokens` of `partition`: the prompt cache saved / restored, the sequence cut to `reuse`. */
    void placeKv(Slot & slot, const std::vector<llama_token> & tokens, const std::string & partition, int32_t & reuse);
    /** Ends a job that waits in the loop (never placed, or parked) with Done(cancelled). */
    void cancelWaiting(uint32_t jobId, int32_t promptTokens, int32_t cachedTokens, int32_t generated);
    void assign(JobSpec && job);
    /** The free slot to run a job on; `reuse` = prompt tokens its KV already holds (0 for another partition's slot). */
    Slot & pickSlot(const std::vector<llama_token> & prompt, const std::string & partition, int32_t & reuse);
    bool anyBusy() const;
    /** Publishes the KV cells busy slots hold (LoopStats::kvCellsUsed); after each command batch and each step. */
    void publishKvUse();
    /** Whether `slot`'s prompt (prompt and promptPos set) rides in the generating rows' pass (promptRideTokens). */
    bool ridesWithDecoders(const Slot & slot) const;
    void compact();
    void migrate(Slot & from, Slot & to);
    void step();
    void onToken(Slot & slot, llama_token token);
    void emitText(Slot & slot, std::string text);
    /** `stop`: the stop string that ended the text (reason "stop" by a stop string), else empty. */
    void finish(Slot & slot, const char * reason, bool keepCache, const std::string & stop = std::string());
    void fail(Slot & slot, const std::string & code, const std::string & message);
    /** Queues a job's Done event (reason, token counts, the stop string that ended it or empty) / its Error event. */
    void emitDone(uint32_t jobId, const char * reason, int32_t promptTokens, int32_t cachedTokens, int32_t completionTokens,
                  const std::string & stop = std::string());
    void emitError(uint32_t jobId, const std::string & code, const std::string & message);
    /** Ends a job that never got a slot (its submit was counted in reserved_). */
    void refuse(uint32_t jobId, const std::string & code, const std::string & message);
    void recordLogprob(Slot & slot, llama_token token);
    void release(Slot & slot);
    void flushEvents();
    const std::string & piece(llama_token token);

    const LoopOptions options_;
    const EventSink sink_;
    std::thread thread_;
    std::mutex joinMutex_;

    // Guarded by mutex_: the owner's view of the loop.
    std::mutex mutex_;
    std::condition_variable wake_;
    std::vector<Command> inbox_;
    int32_t reserved_ = 0;  // jobs submitted and not yet terminal
    bool ready_ = false;
    bool stopRequested_ = false;
    int32_t contextSize_ = 0;
    int32_t vocabSize_ = 0;
    int32_t modelLayers_ = 0;
    /** An embeddings-only encoder (model_kind.h): no generation context; submit() refuses every job. Set by load(). */
    bool embeddingsOnly_ = false;
    int32_t gpuLayers_ = 0;               // layers offloaded to gpu_ (0: CPU only)
    ggml_backend_dev_t gpu_ = nullptr;

    std::atomic<bool> abortDecode_{false};
    /** The counters stats() reads (loop_stats.h). */
    LoopCounters counters_;
    StepProfile profile_;
    /** Threads that sample output rows in parallel (on a GPU; null: the loop thread alone). */
    std::unique_ptr<RowPool> rowPool_;
    std::vector<Slot *> sampleRows_;
    /** Fewer rows than this are sampled on the loop thread (waking the pool costs more than they do). */
    static constexpr size_t kParallelSampleRows = 8;

    // Loop thread only.
    llama_model * model_ = nullptr;
    llama_context * ctx_ = nullptr;
    /** Compute thread pools the context has run on (calibration candidates too); freed after ctx_. */
    std::vector<std::unique_ptr<ComputeThreads>> computePools_;
    ComputeThreads * computeThreads_ = nullptr;  // the one attached to ctx_
    int32_t threads_ = 0;
    ThreadCalibration calibration_;
    const llama_vocab * vocab_ = nullptr;
    llama_memory_t memory_ = nullptr;
    llama_batch batch_{};
    bool batchAllocated_ = false;
    /** One KV stream per slot and a plain KV cache: busy slots can be packed by copying streams. */
    bool canCompact_ = false;
    int32_t nBatch_ = 0;
    std::vector<Slot> slots_;
    /** Jobs submitted with no free slot, in arrival order (schedule() places them). */
    std::deque<JobSpec> waiting_;
    /** Batch jobs parked for interactive ones (busy, no slot: `seq` unused), oldest first. */
    std::deque<Slot> parked_;
    /**
     * batchSitsOut(): an interactive-only decode step's time, what batch rows add to it (EMAs, ms), the batch credit
     * (ms). kInteractiveSlowdown: what a step with batch rows may cost on average against an interactive-only one;
     * below the client-side goal of 1.25x (0.8x the speed) by what the loop cannot see (docs/scheduler.md).
     */
    static constexpr double kInteractiveSlowdown = 1.15;
    /** EMA weights of soloStepMs_ toward a faster and toward a slower interactive-only step. */
    static constexpr double kSoloFollowDown = 0.5;
    static constexpr double kSoloFollowUp = 0.05;
    /** The step just run, for shareStep() once its turn of the loop (apply, schedule, step, events) is over. */
    enum class ShareKind { None, Solo, WithBatch };
    ShareKind shareKind_ = ShareKind::None;
    double soloStepMs_ = 0.0;
    double batchExtraMs_ = 0.0;
    double batchCreditMs_ = 0.0;
    /** KV states slots gave up (null for models whose memory cannot be copied per sequence). */
    std::unique_ptr<PromptCache> promptCache_;
    /** Prompt chunk sizes by measured step time (--step-time-ratio). */
    PrefillPacer pacer_;
    /** Parsed grammars by text (templates cloned per job); freed before the model. */
    std::unique_ptr<GrammarCache> grammars_;
    /** The vocabulary's UTF-8 table for grammar jobs: built at the first one, kept until unload. */
    std::unique_ptr<Utf8TokenTable> utf8Table_;
    std::vector<LoopEvent> events_;
    uint64_t clock_ = 0;
    std::string pieceBuf_;
};

}  // namespace hearth
