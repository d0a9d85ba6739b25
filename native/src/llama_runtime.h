// Process-wide llama.cpp setup shared by every slot loop of every worker thread of this process:
// ggml backends (loaded once), llama_backend_init (once), and the log callback.
#pragma once

#include <atomic>
#include <string>

#include "loop_types.h"

namespace hearth {

/**
 * Makes sure a CPU backend is registered, loading the prebuilt backends from `backendDir` (empty: the
 * folder of the libllama this process loaded) unless one already is (node-llama-cpp in the same process
 * may have loaded them). Thread-safe; cheap after the first success. Returns "" on success, else why not.
 */
std::string ensureLlamaRuntime(const std::string & backendDir);

/**
 * Installs Hearth's log callback (errors only, or everything with HEARTH_NATIVE_LOG=debug) unless
 * someone else (node-llama-cpp) has already installed one. Called once when the addon loads.
 */
void installLogCallbackIfDefault();

/** llama.cpp's abort callback (`abort_callback_data`: a std::atomic<bool>): stop the graph once the flag is set. */
inline bool abortWhenFlagSet(void * data) {
    return static_cast<std::atomic<bool> *>(data)->load(std::memory_order_relaxed);
}

/** While *flag is true, Hearth's callback drops llama.cpp logs made on the calling thread. */
void quietLogsOnThisThreadWhen(const std::atomic<bool> * flag);

/**
 * Loads the ggml GPU backend library at `path` (e.g. a libggml-cuda.so built with GGML_BACKEND_DL) once per
 * process and sets `device` to its first GPU device. Later calls with the same path are cheap; another path
 * after a success is refused (the registry holds one). Thread-safe. Returns "" on success, else why not.
 */
std::string ensureGpuBackend(const std::string & path, ggml_backend_dev_t & device);

/** Name, description and memory (free, total) of a backend device. */
GpuDevice describeDevice(ggml_backend_dev_t device);

/** File name of the ggml CPU backend library this process uses (e.g. libggml-cpu-zen4.so), "" if unknown. */
std::string cpuBackendLibrary();

/** The last error line llama.cpp logged on the calling thread through Hearth's callback ("" if none). */
std::string lastLlamaErrorOnThisThread();

/** Forgets the last error line of the calling thread (before a call whose own error is wanted). */
void clearLastLlamaErrorOnThisThread();

}  // namespace hearth
