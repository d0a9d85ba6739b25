// What one llama_decode step costs for the batch shapes of Hearth's slot loop: D generating slots (one token
// each) with or without a chunk of a prompt, on node-llama-cpp's prebuilt llama.cpp (the library Hearth loads).
// Built and run by bench/step-cost.ts; prints one JSON object per measurement on stdout.
//
//   step-cost <model.gguf> <threads> <decoders> <decoder context> <prompt contexts,> <chunks,> <reps>
//
// The decoders are sequences 0..D-1, the prompt is sequence D, one KV stream per sequence (Hearth's default).
// Each timed step is undone (its cells removed) so every repetition sees the same contexts; the figure is the
// median (the shapes of one row take turns). Compute threads: a persistent ggml threadpool with poll 50, as Hearth's loop attaches by default.
#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <sstream>
#include <string>
#include <vector>

#include "ggml-backend.h"
#include "ggml-cpu.h"
#include "batch_row.h"
#include "llama.h"

namespace {

llama_context * g_ctx = nullptr;
llama_memory_t g_mem = nullptr;
llama_batch g_batch;
std::vector<int> g_len;  // tokens held by each sequence

void add(llama_token token, int pos, int seq, bool output) {
    hearth::addBatchRow(g_batch, token, pos, seq, output);
}

void decodeOrDie() {
    if (llama_decode(g_ctx, g_batch) != 0) {
        std::fprintf(stderr, "llama_decode failed\n");
        std::exit(1);
    }
}

/** Prefills sequence `seq` up to `n` tokens (tokens are arbitrary ids: the cost does not depend on them). */
void fill(int seq, int n) {
    while (g_len[seq] < n) {
        g_batch.n_tokens = 0;
        const int k = std::min(256, n - g_len[seq]);
        for (int j = 0; j < k; j++) {
            add(100 + (g_len[seq] + j) % 1000, g_len[seq] + j, seq, j == k - 1);
        }
        decodeOrDie();
        g_len[seq] += k;
    }
}

enum class Order { SeqOrder, PromptFirst };

/**
 * One timed step: `decoders` generating rows (sequences 0..decoders-1, one token each) plus `chunk` tokens of
 * the prompt sequence `ps`; undone afterwards.
 */
double step(int decoders, int ps, int chunk, Order order) {
    g_batch.n_tokens = 0;
    auto addPrompt = [&]() {
        for (int j = 0; j < chunk; j++) {
            add(300 + j, g_len[ps] + j, ps, j == chunk - 1);
        }
    };
    if (order == Order::PromptFirst) {
        addPrompt();
    }
    for (int s = 0; s < decoders; s++) {
        add(200 + s, g_len[s], s, true);
    }
    if (order == Order::SeqOrder) {
        addPrompt();
    }
    const auto t0 = std::chrono::steady_clock::now();
    decodeOrDie();
    const double ms = std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count();
    for (int s = 0; s < decoders; s++) {
        llama_memory_seq_rm(g_mem, s, g_len[s], -1);
    }
    llama_memory_seq_rm(g_mem, ps, g_len[ps], -1);
    return ms;
}

double median(std::vector<double> v) {
    std::sort(v.begin(), v.end());
    return v[v.size() / 2];
}

std::vector<int> parseList(const char * s) {
    std::vector<int> out;
    std::stringstream in(s);
    std::string item;
    while (std::getline(in, item, ',')) {
        out.push_back(std::atoi(item.c_str()));
    }
    return out;
}

void emit(const char * shape, int promptContext, int chunk, double ms) {
    std::printf("{\"shape\":\"%s\",\"promptContext\":%d,\"chunk\":%d,\"ms\":%.3f}\n", shape, promptContext, chunk, ms);
    std::fflush(stdout);
}

}  // namespace

int main(int argc, char ** argv) {
    if (argc != 8) {
        std::fprintf(stderr, "usage: step-cost <model> <threads> <decoders> <decoder context> <prompt contexts,> <chunks,> <reps>\n");
        return 2;
    }
    const char * modelPath = argv[1];
    const int threads = std::atoi(argv[2]);
    const int decoders = std::atoi(argv[3]);
    const int decoderContext = std::atoi(argv[4]);
    const std::vector<int> promptContexts = parseList(argv[5]);
    const std::vector<int> chunks = parseList(argv[6]);
    const int reps = std::max(1, std::atoi(argv[7]));
    const int maxPrompt = *std::max_element(promptContexts.begin(), promptContexts.end());
    const int maxChunk = *std::max_element(chunks.begin(), chunks.end());

    llama_log_set([](ggml_log_level level, const char * text, void *) {
        if (level == GGML_LOG_LEVEL_ERROR) std::fputs(text, stderr);
    }, nullptr);
    llama_backend_init();
    if (ggml_backend_dev_by_type(GGML_BACKEND_DEVICE_TYPE_CPU) == nullptr) {
        const char * dir = std::getenv("STEP_COST_BACKEND_DIR");
        ggml_backend_load_all_from_path(dir);
    }
    ggml_backend_dev_t cpu = ggml_backend_dev_by_type(GGML_BACKEND_DEVICE_TYPE_CPU);
    if (cpu == nullptr) {
        std::fprintf(stderr, "no ggml CPU backend\n");
        return 1;
    }
    llama_model_params mp = llama_model_default_params();
    mp.n_gpu_layers = 0;
    llama_model * model = llama_model_load_from_file(modelPath, mp);
    if (model == nullptr) {
        std::fprintf(stderr, "cannot load %s\n", modelPath);
        return 1;
    }
    const int perSeq = std::max(decoderContext + 8, maxPrompt + maxChunk) + 16;
    llama_context_params cp = llama_context_default_params();
    cp.n_seq_max = (uint32_t) decoders + 1;
    cp.n_ctx = (uint32_t) perSeq * cp.n_seq_max;
    cp.n_batch = 512;
    cp.n_ubatch = 512;
    cp.n_threads = threads;
    cp.n_threads_batch = threads;
    cp.no_perf = true;
    if (const char * fa = std::getenv("STEP_COST_FLASH_ATTN")) {
        cp.flash_attn_type = std::string(fa) == "on" ? LLAMA_FLASH_ATTN_TYPE_ENABLED
                           : std::string(fa) == "off" ? LLAMA_FLASH_ATTN_TYPE_DISABLED : LLAMA_FLASH_ATTN_TYPE_AUTO;
    }
    g_ctx = llama_init_from_model(model, cp);
    if (g_ctx == nullptr) {
        std::fprintf(stderr, "cannot create a context\n");
        return 1;
    }
    auto * reg = ggml_backend_dev_backend_reg(cpu);
    auto newPool = (ggml_threadpool * (*)(ggml_threadpool_params *)) ggml_backend_reg_get_proc_address(reg, "ggml_threadpool_new");
    if (newPool != nullptr) {
        ggml_threadpool_params tpp = ggml_threadpool_params_default(threads);
        tpp.poll = 50;
        ggml_threadpool * pool = newPool(&tpp);
        llama_attach_threadpool(g_ctx, pool, pool);
    }
    g_mem = llama_get_memory(g_ctx);
    g_batch = llama_batch_init(512, 0, 1);
    g_len.assign(decoders + 1, 0);
    for (int s = 0; s < decoders; s++) {
        fill(s, decoderContext);
    }
    for (int i = 0; i < 3; i++) {
        step(decoders, decoders, 0, Order::SeqOrder);  // warm-up
    }
    for (int pc : promptContexts) {
        fill(decoders, pc);
        const int ps = decoders;
        for (int k : chunks) {
            // The four shapes take turns, so a drift of the machine's speed moves them together.
            std::vector<double> decode, mixed, first, alone;
            for (int r = 0; r < reps; r++) {
                decode.push_back(step(decoders, ps, 0, Order::SeqOrder));
                mixed.push_back(step(decoders, ps, k, Order::SeqOrder));
                first.push_back(step(decoders, ps, k, Order::PromptFirst));
                alone.push_back(step(0, ps, k, Order::SeqOrder));
            }
            emit("decode", pc, k, median(decode));
            emit("mixed", pc, k, median(mixed));
            emit("prompt-first", pc, k, median(first));
            emit("alone", pc, k, median(alone));
        }
    }
    return 0;
}
