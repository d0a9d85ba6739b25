// Plain data that crosses between the JavaScript thread and a slot loop's own thread.
// Nothing here touches N-API or llama.cpp state; it is copied or moved, never shared.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "llama.h"

namespace hearth {

/** A GPU device the ggml backend registry lists (ggml_backend_dev_*). */
struct GpuDevice {
    std::string name;
    std::string description;
    size_t memoryFree = 0;
    size_t memoryTotal = 0;
};

/** Settings of one slot loop, fixed when it is created. */
struct LoopOptions {
    std::string modelPath;
    /** Folder holding the prebuilt ggml backends (libggml-cpu-*.so), loaded once per process; "" = beside libllama. */
    std::string backendDir;
    /** ggml GPU backend library to load once per process (ggml_backend_load, e.g. libggml-cuda.so); "" = none. */
    std::string gpuBackend;
    /** Model layers offloaded to the first GPU (-1 = all; 0 = CPU only, gpuBackend unused). */
    int32_t gpuLayers = 0;
    /** Threads sampling a step's output rows (row_pool.h), the loop's included; 0 = auto: on a GPU min(8, cores / 2), else 1. */
    int32_t samplerThreads = 0;
    /** Tokens of KV per slot. */
    int32_t contextSize = 2048;
    int32_t slots = 1;
    int32_t threads = 2;
    int32_t threadsBatch = 2;
    /** Most tokens per llama_decode call (prompt chunks + one token per generating slot). */
    int32_t batchSize = 512;
    /** One KV buffer shared by all slots (true) or one stream per slot (false, llama-server's -np default). */
    bool kvUnified = false;
    /** Extra weight buffer types (CPU repack, AMX); false = llama-server's --no-repack. */
    bool weightRepack = true;
    /** Persistent ggml compute threads attached to the context (compute_threads.h); false = ggml's per-decode threads. */
    bool persistentThreads = true;
    /** How long idle compute threads poll before sleeping (0..100, ggml's unit; llama-server's --poll). */
    int32_t threadPoll = 0;
    /** Most tokens per step while a slot is generating (step_budget.h); 0 = batchSize. */
    int32_t stepTokenBudget = 0;
    /**
     * > 0: while slots generate, a prompt with at most this many tokens to evaluate (at its start) is fed one token
     * a step in their pass instead of a pass of its own (llama.cpp splits a step whose sequences bring unequal
     * token counts into passes): one pass a step, its first token up to this many steps later. 0 = off.
     */
    int32_t promptRideTokens = 0;
    /** > 100: while slots generate, a step with prompt chunks takes at most this % of a decode-only step (prefill_pacer.h); 0 = off. */
    double prefillStepPercent = 0.0;
    /** Host-memory prompt cache (prompt_cache.h), MiB of KV state kept; 0 = none. */
    int32_t promptCacheMiB = 0;
    /** > 0: choose 1..threads compute threads at load by timing them (calibrateThreads), for this many cores. */
    int32_t calibrateCores = 0;
    /** The JavaScript work the calibration allows for (ms): per step, and per token a step forwards (CalibrationSpec). */
    double calibrateJsStepMs = 0.025;
    double calibrateJsTokenMs = 0.025;
};

/** Sampler chain settings of one job (native/generation-job.ts SamplingParams, the same field names). */
struct SamplingSpec {
    float temperature = 0.0f;
    float topP = 1.0f;
    int32_t topK = 0;
    float minP = 0.0f;
    float repeatPenalty = 1.0f;
    float presencePenalty = 0.0f;
    float frequencyPenalty = 0.0f;
    /** -1 = the whole slot context. */
    int32_t penaltyLastN = 64;
    uint32_t seed = 0;
};

/**
 * One generation request, owned by the loop once submitted: the GenerationJob of native/generation-job.ts (the
 * same field names, every field given and checked by SlotLoopWrap::Submit) with its id and prompt tokens.
 */
struct JobSpec {
    uint32_t id = 0;
    std::vector<llama_token> prompt;
    /** >= 1 (the engine resolved it); the loop also ends the job when the slot's context is full. */
    int32_t maxTokens = 1;
    std::vector<std::string> stops;
    SamplingSpec sampling;
    /** GBNF (root rule `root`) the completion must match; "" = free text. */
    std::string grammar;
    /** -1: no logprobs (nothing is computed). 0..20: each token's logprob and this many alternatives. */
    int32_t topLogprobs = -1;
    /**
     * The prompt-cache partition (an opaque string: the account, the key, or "" for one shared cache). The job
     * reuses only KV that jobs of the same partition left, in a slot or in the host prompt cache.
     */
    std::string cachePartition;
    /**
     * Batch priority: while a job without it waits for a slot, this job yields its slot at the next step (parked:
     * its KV saved to the prompt cache, its sampler and stop state kept) and resumes when a slot frees.
     */
    bool batch = false;
};

/** One alternative at a position: the token's text (raw bytes, maybe partial UTF-8) and its logprob. */
struct TokenAlternative {
    std::string piece;
    float logprob = 0.0f;
};

/**
 * One generated token's log-probability under the model's raw distribution at that position (the
 * log-softmax of its logits over the whole vocabulary, before logit bias, grammar, penalties, truncation
 * and temperature), with the most likely alternatives, best first.
 */
struct TokenLogprob {
    std::string piece;
    float logprob = 0.0f;
    std::vector<TokenAlternative> top;
};

enum class EventKind : uint8_t {
    Ready,       // model and context loaded; submit() accepted from now on
    LoadFailed,  // text = why; Disposed follows
    Prompt,      // job's prompt evaluated (or reused)
    Text,        // text = new complete UTF-8 text, tokenCount tokens produced it (+ their logprobs if asked)
    Done,        // code = finish reason: stop | length | cancelled; text = the stop string that ended it, if one did
    Error,       // code + text = message; terminal
    Disposed,    // the loop thread has freed everything and is about to exit
};

/** What the loop reports; delivered to JavaScript in batches, in order. */
struct LoopEvent {
    EventKind kind = EventKind::Text;
    uint32_t job = 0;
    std::string text;
    std::string code;
    int32_t tokenCount = 0;
    int32_t promptTokens = 0;
    int32_t cachedTokens = 0;
    int32_t completionTokens = 0;
    int32_t promptSteps = 0;     // Prompt only: decode steps that evaluated prompt tokens of this job
    // Text only, when the job asked for logprobs: one entry per token that produced `text`.
    std::vector<TokenLogprob> logprobs;
    // Ready only
    int32_t contextSize = 0;     // tokens per slot the loop enforces
    int32_t contextTotal = 0;    // llama_n_ctx
    int32_t batchSize = 0;       // llama_n_batch
    int32_t vocabSize = 0;
    int32_t threads = 0;             // compute threads decoding uses
    bool threadPool = false;         // persistent compute threads attached
    std::string cpuBackend;          // file of the ggml CPU backend library in use
    std::vector<double> calibration; // (threads, ms per step, estimate ms) triples, when calibrated
    std::vector<double> calibrationStep; // (rows, history, JavaScript allowance ms) of the timed step, when calibrated
    int32_t gpuLayers = 0;           // layers on the GPU (0: computes on the CPU)
    int32_t modelLayers = 0;         // llama_model_n_layer (+1 output layer offloadable)
    bool embeddingsOnly = false;     // an encoder that serves embeddings only (model_kind.h): no generation context
    std::vector<GpuDevice> gpuDevices; // the GPU the model was offloaded to (empty on CPU)
};

}  // namespace hearth
