// Module entry of hearth_native.node: exports `SlotLoop`, `EventRelay` and `buildInfo()`.
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
#include "slot_loop_wrap.h"

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
};

}  // namespace

}  // namespace hearth

using HearthAddon = hearth::HearthAddon;
NODE_API_ADDON(HearthAddon)
