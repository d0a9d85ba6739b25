// Module entry of hearth_native.node: exports `SlotLoop`, `EventRelay`, `buildInfo()`, `loadCpuBackend()`, and for the
// tests that hold the samplers' shortcuts to their references, `firstMaxIndex()` and `topKTokens()`.
// A context-aware Node-API addon: every environment (main thread or worker_thread) that loads it gets
// its own exports and its own instances; the only process-wide state is llama.cpp's (see llama_runtime.h)
// and the registry of event relays (event_relay.h).
#include <cstring>

#include "addon_info.h"
#include "ggml.h"
#include "llama.h"
#include "llama_runtime.h"
#include "napi.h"
#include "event_relay.h"
#include "first_max.h"
#include "slot_loop_wrap.h"
#include "top_k.h"

namespace hearth {

VersionCheck checkVersions() {
    VersionCheck c;
    c.runtimeLlama = llama_version();
    c.runtimeGgml = ggml_version();
    c.runtimeGgmlCommit = ggml_commit();
    const std::string headerLlama = HEARTH_HEADER_LLAMA_VERSION;
    const std::string headerGgml = HEARTH_HEADER_GGML_VERSION;
    // llama_version() is "<major>.<minor>.<patch>" with an optional "-suffix".
    const bool llamaOk = c.runtimeLlama == headerLlama || c.runtimeLlama.rfind(headerLlama + "-", 0) == 0;
    const bool ggmlOk = c.runtimeGgml == headerGgml;
    c.ok = llamaOk && ggmlOk;
    if (!c.ok) {
        c.message = "hearth_native was compiled against llama.cpp " + headerLlama + " / ggml " + headerGgml +
                    " but the loaded libraries are llama.cpp " + c.runtimeLlama + " / ggml " + c.runtimeGgml +
                    "; rebuild it with `node --import tsx native/build.ts`";
    }
    return c;
}

namespace {

class HearthAddon : public Napi::Addon<HearthAddon> {
public:
    HearthAddon(Napi::Env env, Napi::Object exports) {
        installLogCallbackIfDefault();
        DefineAddon(exports, {
            InstanceMethod("buildInfo", &HearthAddon::BuildInfo),
            InstanceMethod("loadCpuBackend", &HearthAddon::LoadCpuBackend),
            InstanceMethod("firstMaxIndex", &HearthAddon::FirstMaxIndex),
            InstanceMethod("topKTokens", &HearthAddon::TopKTokens),
            InstanceValue("SlotLoop", SlotLoopWrap::Define(env), napi_enumerable),
            InstanceValue("EventRelay", EventRelayWrap::Define(env), napi_enumerable),
        });
    }

private:
    Napi::Value BuildInfo(const Napi::CallbackInfo & info) {
        Napi::Env env = info.Env();
        const VersionCheck c = checkVersions();
        Napi::Object o = Napi::Object::New(env);
        o.Set("headerLlamaVersion", HEARTH_HEADER_LLAMA_VERSION);
        o.Set("headerGgmlVersion", HEARTH_HEADER_GGML_VERSION);
        o.Set("headerCommit", HEARTH_HEADER_COMMIT);
        o.Set("llamaVersion", c.runtimeLlama);
        o.Set("ggmlVersion", c.runtimeGgml);
        o.Set("ggmlCommit", c.runtimeGgmlCommit);
        o.Set("versionsMatch", c.ok);
        if (!c.ok) {
            o.Set("mismatch", c.message);
        }
        o.Set("maxSlots", (double) llama_max_parallel_sequences());
        return o;
    }

    // firstMaxIndex(values: Float32Array, plainScan?: boolean): number. The greedy sampler's choice over `values`
    // (first_max.h); with plainScan, the reference scan's.
    Napi::Value FirstMaxIndex(const Napi::CallbackInfo & info) {
        Napi::Env env = info.Env();
        if (info.Length() < 1 || !info[0].IsTypedArray() || info[0].As<Napi::TypedArray>().TypedArrayType() != napi_float32_array) {
            Napi::TypeError::New(env, "firstMaxIndex(values: Float32Array, plainScan?: boolean)").ThrowAsJavaScriptException();
            return env.Undefined();
        }
        const Napi::Float32Array values = info[0].As<Napi::Float32Array>();
        const bool scan = info.Length() > 1 && info[1].ToBoolean().Value();
        const int32_t n = (int32_t) values.ElementLength();
        return Napi::Number::New(env, scan ? firstMaxIndexScan(values.Data(), n) : firstMaxIndex(values.Data(), n));
    }

    // topKTokens(values: Float32Array, k: number): Int32Array. The tokens top_k.h keeps, largest first (1 <= k <= n).
    Napi::Value TopKTokens(const Napi::CallbackInfo & info) {
        Napi::Env env = info.Env();
        const bool floats = info.Length() >= 2 && info[0].IsTypedArray() &&
                            info[0].As<Napi::TypedArray>().TypedArrayType() == napi_float32_array && info[1].IsNumber();
        const Napi::Float32Array values = floats ? info[0].As<Napi::Float32Array>() : Napi::Float32Array();
        const int32_t n = floats ? (int32_t) values.ElementLength() : 0;
        const int32_t k = floats ? info[1].As<Napi::Number>().Int32Value() : 0;
        if (!floats || k < 1 || k > n) {
            Napi::TypeError::New(env, "topKTokens(values: Float32Array, k: 1..values.length)").ThrowAsJavaScriptException();
            return env.Undefined();
        }
        std::vector<llama_token_data> out;
        topKCandidates(values.Data(), n, k, out);
        Napi::Int32Array tokens = Napi::Int32Array::New(env, out.size());
        for (size_t i = 0; i < out.size(); i++) {
            tokens[i] = out[i].id;
        }
        return tokens;
    }

    // loadCpuBackend(dir?: string): string. Loads ggml's CPU backend for the process now (llama_runtime.h:
    // the best-scoring libggml-cpu-*.so of `dir`, else of the loaded libllama's folder), unless one is loaded
    // already (the first load wins, process-wide); returns the file name of the library in use. Throws when none
    // can be loaded (no library there, or none this CPU can execute: ggml scores those 0).
    Napi::Value LoadCpuBackend(const Napi::CallbackInfo & info) {
        Napi::Env env = info.Env();
        std::string dir;
        if (info.Length() > 0 && !info[0].IsUndefined()) {
            if (!info[0].IsString()) {
                Napi::TypeError::New(env, "loadCpuBackend(dir?: string)").ThrowAsJavaScriptException();
                return env.Undefined();
            }
            dir = info[0].As<Napi::String>().Utf8Value();
        }
        const std::string error = ensureLlamaRuntime(dir);
        if (!error.empty()) {
            Napi::Error::New(env, error).ThrowAsJavaScriptException();
            return env.Undefined();
        }
        return Napi::String::New(env, cpuBackendLibrary());
    }
};

}  // namespace

}  // namespace hearth

using HearthAddon = hearth::HearthAddon;
NODE_API_ADDON(HearthAddon)
