#include "llama_runtime.h"

#include <dlfcn.h>

#include <cstdio>
#include <cstdlib>
#include <atomic>
#include <cstring>
#include <mutex>

#include "ggml-backend.h"
#include "llama.h"

namespace hearth {

namespace {

std::mutex g_runtimeMutex;
bool g_runtimeReady = false;
std::string g_gpuBackendPath;           // the GPU backend library loaded into this process ("" = none)
ggml_backend_reg_t g_gpuBackend = nullptr;

thread_local std::string t_lastError;
thread_local const std::atomic<bool> * t_quietWhen = nullptr;

bool debugLogging() {
    const char * v = std::getenv("HEARTH_NATIVE_LOG");
    return v != nullptr && std::strcmp(v, "debug") == 0;
}

void hearthLog(ggml_log_level level, const char * text, void * /*user*/) {
    if (t_quietWhen != nullptr && t_quietWhen->load(std::memory_order_relaxed)) {
        return;  // a decode being aborted on purpose logs "failed" errors that mean nothing
    }
    if (level == GGML_LOG_LEVEL_ERROR) {
        t_lastError = text;
        while (!t_lastError.empty() && (t_lastError.back() == '\n' || t_lastError.back() == ' ')) {
            t_lastError.pop_back();
        }
    }
    static const bool debug = debugLogging();
    if (debug || level == GGML_LOG_LEVEL_ERROR) {
        std::fputs(text, stderr);
    }
}

/** True when `fn` lives in one of llama.cpp's own libraries, i.e. it is ggml's default logger. */
bool isLibraryDefault(ggml_log_callback fn) {
    if (fn == nullptr) {
        return true;
    }
    Dl_info info{};
    if (dladdr(reinterpret_cast<void *>(fn), &info) == 0 || info.dli_fname == nullptr) {
        return false;
    }
    const char * name = std::strrchr(info.dli_fname, '/');
    name = name != nullptr ? name + 1 : info.dli_fname;
    return std::strncmp(name, "libggml", 7) == 0 || std::strncmp(name, "libllama", 8) == 0;
}

/** Folder of the libllama this process actually loaded (where the prebuilt backends lie beside it). */
std::string loadedLlamaDir() {
    Dl_info info{};
    if (dladdr(reinterpret_cast<void *>(&llama_backend_init), &info) == 0 || info.dli_fname == nullptr) {
        return {};
    }
    std::string path = info.dli_fname;
    const size_t slash = path.rfind('/');
    return slash == std::string::npos ? std::string(".") : path.substr(0, slash);
}

}  // namespace

std::string ensureLlamaRuntime(const std::string & requestedDir) {
    std::lock_guard<std::mutex> lock(g_runtimeMutex);
    if (g_runtimeReady) {
        return {};
    }
    const std::string backendDir = requestedDir.empty() ? loadedLlamaDir() : requestedDir;
    llama_backend_init();
    if (ggml_backend_dev_by_type(GGML_BACKEND_DEVICE_TYPE_CPU) == nullptr) {
        ggml_backend_load_all_from_path(backendDir.c_str());
    }
    if (ggml_backend_dev_by_type(GGML_BACKEND_DEVICE_TYPE_CPU) == nullptr) {
        return "no ggml CPU backend could be loaded from " + backendDir;
    }
    g_runtimeReady = true;
    return {};
}

std::string ensureGpuBackend(const std::string & path, ggml_backend_dev_t & device) {
    std::lock_guard<std::mutex> lock(g_runtimeMutex);
    device = nullptr;
    if (path.empty()) {
        return "no GPU backend library was given";
    }
    if (g_gpuBackend != nullptr && path != g_gpuBackendPath) {
        return "another GPU backend is loaded in this process: " + g_gpuBackendPath;
    }
    if (g_gpuBackend == nullptr) {
        t_lastError.clear();
        g_gpuBackend = ggml_backend_load(path.c_str());
        if (g_gpuBackend == nullptr) {
            const std::string why = t_lastError;
            return "ggml could not load the GPU backend " + path + (why.empty() ? "" : ": " + why);
        }
        g_gpuBackendPath = path;
    }
    for (size_t i = 0; i < ggml_backend_reg_dev_count(g_gpuBackend); i++) {
        ggml_backend_dev_t dev = ggml_backend_reg_dev_get(g_gpuBackend, i);
        if (ggml_backend_dev_type(dev) == GGML_BACKEND_DEVICE_TYPE_GPU) {
            device = dev;
            return {};
        }
    }
    return "the GPU backend " + path + " found no GPU device";
}

GpuDevice describeDevice(ggml_backend_dev_t device) {
    GpuDevice d;
    if (device == nullptr) {
        return d;
    }
    d.name = ggml_backend_dev_name(device);
    d.description = ggml_backend_dev_description(device);
    ggml_backend_dev_memory(device, &d.memoryFree, &d.memoryTotal);
    return d;
}

void installLogCallbackIfDefault() {
    std::lock_guard<std::mutex> lock(g_runtimeMutex);
    ggml_log_callback current = nullptr;
    void * data = nullptr;
    llama_log_get(&current, &data);
    if (current == hearthLog || !isLibraryDefault(current)) {
        return;
    }
    llama_log_set(hearthLog, nullptr);
}

void quietLogsOnThisThreadWhen(const std::atomic<bool> * flag) {
    t_quietWhen = flag;
}

std::string cpuBackendLibrary() {
    ggml_backend_dev_t dev = ggml_backend_dev_by_type(GGML_BACKEND_DEVICE_TYPE_CPU);
    if (dev == nullptr) {
        return {};
    }
    void * fn = ggml_backend_reg_get_proc_address(ggml_backend_dev_backend_reg(dev), "ggml_backend_set_n_threads");
    Dl_info info{};
    if (fn == nullptr || dladdr(fn, &info) == 0 || info.dli_fname == nullptr) {
        return {};
    }
    const char * name = std::strrchr(info.dli_fname, '/');
    return name != nullptr ? name + 1 : info.dli_fname;
}

std::string lastLlamaErrorOnThisThread() {
    return t_lastError;
}

void clearLastLlamaErrorOnThisThread() {
    t_lastError.clear();
}

}  // namespace hearth
