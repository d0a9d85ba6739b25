#include "event_relay.h"

#include <atomic>
#include <unordered_map>

#include "loop_event_js.h"

namespace hearth {

namespace {

std::mutex registryMutex;
std::unordered_map<uint32_t, std::shared_ptr<RelaySink>> registry;
std::atomic<uint32_t> lastRelayId{ 0 };

}  // namespace

std::shared_ptr<RelaySink> findRelaySink(uint32_t id) {
    std::lock_guard<std::mutex> lock(registryMutex);
    auto it = registry.find(id);
    return it == registry.end() ? nullptr : it->second;
}

void RelaySink::post(std::vector<LoopEvent> && events) {
    if (!mailbox_.push(std::move(events))) {
        return;
    }
    std::lock_guard<std::mutex> lock(callMutex_);
    if (!closed_) {
        napi_call_threadsafe_function(tsfn_, nullptr, napi_tsfn_nonblocking);
    }
}

Napi::Function EventRelayWrap::Define(Napi::Env env) {
    return DefineClass(env, "EventRelay", {
        InstanceAccessor<&EventRelayWrap::Id>("id"),
        InstanceMethod<&EventRelayWrap::Close>("close"),
    });
}

EventRelayWrap::EventRelayWrap(const Napi::CallbackInfo & info) : Napi::ObjectWrap<EventRelayWrap>(info), env_(info.Env()) {
    Napi::Env env = info.Env();
    if (info.Length() < 1 || !info[0].IsFunction()) {
        throw Napi::TypeError::New(env, "usage: new EventRelay(onEvents)");
    }
    uint32_t id = ++lastRelayId;
    if (id == 0) {
        id = ++lastRelayId;  // 0 is never an id
    }
    sink_ = std::make_shared<RelaySink>(id);
    // The thread-safe function owns a reference to the sink until it is finalized (pending calls included).
    auto * context = new std::shared_ptr<RelaySink>(sink_);
    napi_value name;
    NAPI_THROW_IF_FAILED_VOID(env, napi_create_string_utf8(env, "hearth-event-relay", NAPI_AUTO_LENGTH, &name));
    const napi_status created = napi_create_threadsafe_function(
        env, info[0], nullptr, name, 0, 1, context,
        [](napi_env, void * data, void *) { delete static_cast<std::shared_ptr<RelaySink> *>(data); },
        context, &EventRelayWrap::CallJs, &sink_->tsfn_);
    if (created != napi_ok) {
        delete context;
        NAPI_THROW_IF_FAILED_VOID(env, created);
    }
    napi_unref_threadsafe_function(env, sink_->tsfn_);  // the relay never keeps the event loop alive
    // Registered after the thread-safe function, so at teardown it runs before that function is closed.
    napi_add_env_cleanup_hook(env, &EventRelayWrap::onEnvCleanup, this);
    cleanupHookAdded_ = true;
    std::lock_guard<std::mutex> lock(registryMutex);
    registry[id] = sink_;
}

EventRelayWrap::~EventRelayWrap() {
    close();
    if (cleanupHookAdded_) {
        napi_remove_env_cleanup_hook(env_, &EventRelayWrap::onEnvCleanup, this);
    }
}

void EventRelayWrap::onEnvCleanup(void * arg) {
    auto * self = static_cast<EventRelayWrap *>(arg);
    self->cleanupHookAdded_ = false;
    self->close();
}

void EventRelayWrap::close() {
    if (!sink_) {
        return;
    }
    {
        std::lock_guard<std::mutex> lock(registryMutex);
        registry.erase(sink_->id);
    }
    std::lock_guard<std::mutex> lock(sink_->callMutex_);
    if (!sink_->closed_) {
        sink_->closed_ = true;
        napi_release_threadsafe_function(sink_->tsfn_, napi_tsfn_release);
    }
}

Napi::Value EventRelayWrap::Id(const Napi::CallbackInfo & info) {
    return Napi::Number::New(info.Env(), sink_->id);
}

Napi::Value EventRelayWrap::Close(const Napi::CallbackInfo & info) {
    close();
    return info.Env().Undefined();
}

void EventRelayWrap::CallJs(napi_env env, napi_value callback, void * context, void * /*data*/) {
    if (env == nullptr || context == nullptr) {
        return;  // being torn down
    }
    std::vector<LoopEvent> events = (*static_cast<std::shared_ptr<RelaySink> *>(context))->mailbox_.take();
    if (events.empty()) {
        return;
    }
    try {
        Napi::Function(env, callback).Call({ eventsToJs(Napi::Env(env), events) });
    } catch (const Napi::Error & err) {
        err.ThrowAsJavaScriptException();  // an onEvents bug: surfaces as this thread's uncaught exception
    }
}

}  // namespace hearth
