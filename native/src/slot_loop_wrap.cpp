#include "slot_loop_wrap.h"

#include <string>

#include "addon_info.h"
#include "event_relay.h"
#include "loop_event_js.h"

namespace hearth {

namespace {

double numberOr(const Napi::Object & o, const char * key, double fallback) {
    Napi::Value v = o.Get(key);
    return v.IsNumber() ? v.As<Napi::Number>().DoubleValue() : fallback;
}

/** `owner`: the argument's name in the messages (options, job). */
int32_t requiredInt(const Napi::Object & o, const char * key, int32_t min, int32_t max, const char * owner = "options") {
    Napi::Value v = o.Get(key);
    if (!v.IsNumber()) {
        throw Napi::TypeError::New(o.Env(), std::string(owner) + "." + key + " must be a number");
    }
    const double d = v.As<Napi::Number>().DoubleValue();
    if (!(d >= min && d <= max) || d != (double) (int64_t) d) {
        throw Napi::RangeError::New(o.Env(), std::string(owner) + "." + key + " must be an integer in [" +
                                    std::to_string(min) + ", " + std::to_string(max) + "]");
    }
    return (int32_t) d;
}

double requiredNumber(const Napi::Object & o, const char * key, const char * owner) {
    Napi::Value v = o.Get(key);
    if (!v.IsNumber()) {
        throw Napi::TypeError::New(o.Env(), std::string(owner) + "." + key + " must be a number");
    }
    return v.As<Napi::Number>().DoubleValue();
}

std::string requiredString(const Napi::Object & o, const char * key, const char * owner = "options") {
    Napi::Value v = o.Get(key);
    if (!v.IsString()) {
        throw Napi::TypeError::New(o.Env(), std::string(owner) + "." + key + " must be a string");
    }
    return v.As<Napi::String>().Utf8Value();
}

}  // namespace

Napi::Function SlotLoopWrap::Define(Napi::Env env) {
    return DefineClass(env, "SlotLoop", {
        InstanceMethod<&SlotLoopWrap::Submit>("submit"),
        InstanceMethod<&SlotLoopWrap::Cancel>("cancel"),
        InstanceMethod<&SlotLoopWrap::YieldSlot>("yieldSlot"),
        InstanceMethod<&SlotLoopWrap::Dispose>("dispose"),
        InstanceMethod<&SlotLoopWrap::Stats>("stats"),
        InstanceMethod<&SlotLoopWrap::Embed>("embed"),
    });
}

SlotLoopWrap::SlotLoopWrap(const Napi::CallbackInfo & info) : Napi::ObjectWrap<SlotLoopWrap>(info), env_(info.Env()) {
    Napi::Env env = info.Env();
    if (info.Length() < 2 || !info[0].IsObject() || !info[1].IsFunction()) {
        throw Napi::TypeError::New(env, "usage: new SlotLoop(options, onEvents)");
    }
    const VersionCheck versions = checkVersions();
    if (!versions.ok) {
        throw Napi::Error::New(env, versions.message);
    }
    Napi::Object o = info[0].As<Napi::Object>();
    LoopOptions options;
    options.modelPath = requiredString(o, "modelPath");
    options.backendDir = o.Get("backendDir").IsUndefined() ? std::string() : requiredString(o, "backendDir");
    options.gpuBackend = o.Get("gpuBackend").IsUndefined() ? std::string() : requiredString(o, "gpuBackend");
    options.gpuLayers = o.Get("gpuLayers").IsUndefined() ? 0 : requiredInt(o, "gpuLayers", -1, 1 << 20);
    options.samplerThreads = o.Get("samplerThreads").IsUndefined() ? 0 : requiredInt(o, "samplerThreads", 0, 256);
    options.contextSize = requiredInt(o, "contextSize", 8, 1 << 24);
    options.slots = requiredInt(o, "slots", 1, (int32_t) llama_max_parallel_sequences());
    options.threads = requiredInt(o, "threads", 1, 1024);
    options.threadsBatch = o.Get("threadsBatch").IsUndefined() ? options.threads : requiredInt(o, "threadsBatch", 1, 1024);
    options.batchSize = o.Get("batchSize").IsUndefined() ? 512 : requiredInt(o, "batchSize", 1, 1 << 20);
    options.kvUnified = o.Get("kvUnified").ToBoolean().Value();
    options.weightRepack = o.Get("weightRepack").IsUndefined() ? true : o.Get("weightRepack").ToBoolean().Value();
    options.persistentThreads = o.Get("persistentThreads").IsUndefined() ? true : o.Get("persistentThreads").ToBoolean().Value();
    options.threadPoll = o.Get("threadPoll").IsUndefined() ? options.threadPoll : requiredInt(o, "threadPoll", 0, 100);
    options.stepTokenBudget = o.Get("stepTokenBudget").IsUndefined() ? 0 : requiredInt(o, "stepTokenBudget", 0, 1 << 20);
    options.promptRideTokens = o.Get("promptRideTokens").IsUndefined() ? 0 : requiredInt(o, "promptRideTokens", 0, 1 << 20);
    options.prefillStepPercent = numberOr(o, "prefillStepPercent", 0.0);
    options.promptCacheMiB = o.Get("promptCacheMiB").IsUndefined() ? 0 : requiredInt(o, "promptCacheMiB", 0, 1 << 20);
    options.calibrateCores = o.Get("calibrateCores").IsUndefined() ? 0 : requiredInt(o, "calibrateCores", 0, 4096);
    options.calibrateJsStepMs = numberOr(o, "calibrateJsStepMs", options.calibrateJsStepMs);
    options.calibrateJsTokenMs = numberOr(o, "calibrateJsTokenMs", options.calibrateJsTokenMs);

    embedMaxTokens_ = options.contextSize;
    embedThreads_ = options.threadsBatch;
    loop_ = std::make_unique<SlotLoop>(options, [this](std::vector<LoopEvent> && events) { post(std::move(events)); });
    tsfn_ = Tsfn::New(env, info[1].As<Napi::Function>(), "hearth-slot-loop", 0, 1, this,
                      [](Napi::Env, void *, SlotLoopWrap * self) { self->onTsfnFinalized(); });
    // Registered after the thread-safe function, so at teardown it runs before that function is closed.
    napi_add_env_cleanup_hook(env, &SlotLoopWrap::onEnvCleanup, this);
    cleanupHookAdded_ = true;
    Ref();  // the thread-safe function calls into this object until it is finalized
    selfRefHeld_ = true;
    loop_->start();
}

SlotLoopWrap::~SlotLoopWrap() {
    closeEmbedder();
    if (loop_) {
        loop_->requestStop(true);
        loop_->join();
    }
    if (cleanupHookAdded_ && !envGone_) {
        napi_remove_env_cleanup_hook(env_, &SlotLoopWrap::onEnvCleanup, this);
    }
}

Napi::Value SlotLoopWrap::Submit(const Napi::CallbackInfo & info) {
    Napi::Env env = info.Env();
    if (info.Length() < 3 || !info[0].IsNumber() || !info[1].IsTypedArray() || !info[2].IsObject()) {
        throw Napi::TypeError::New(env, "usage: submit(jobId, tokens: Uint32Array | Int32Array, job: GenerationJob, relay?)");
    }
    JobSpec job;
    Route route;
    job.id = info[0].As<Napi::Number>().Uint32Value();
    Napi::TypedArray tokens = info[1].As<Napi::TypedArray>();
    if (tokens.TypedArrayType() == napi_uint32_array) {
        Napi::Uint32Array a = tokens.As<Napi::Uint32Array>();
        job.prompt.assign(a.Data(), a.Data() + a.ElementLength());
    } else if (tokens.TypedArrayType() == napi_int32_array) {
        Napi::Int32Array a = tokens.As<Napi::Int32Array>();
        job.prompt.assign(a.Data(), a.Data() + a.ElementLength());
    } else {
        throw Napi::TypeError::New(env, "tokens must be a Uint32Array or an Int32Array");
    }
    // The GenerationJob (native/generation-job.ts) as the engine resolved it: every field given, checked, not clamped.
    Napi::Object j = info[2].As<Napi::Object>();
    job.maxTokens = requiredInt(j, "maxTokens", 1, 2147483647, "job");
    Napi::Value stopsValue = j.Get("stops");
    if (!stopsValue.IsArray()) {
        throw Napi::TypeError::New(env, "job.stops must be an array of strings");
    }
    Napi::Array stops = stopsValue.As<Napi::Array>();
    for (uint32_t i = 0; i < stops.Length(); i++) {
        Napi::Value s = stops.Get(i);
        if (!s.IsString()) {
            throw Napi::TypeError::New(env, "job.stops must be strings");
        }
        job.stops.push_back(s.As<Napi::String>().Utf8Value());
    }
    Napi::Value samplingValue = j.Get("sampling");
    if (!samplingValue.IsObject()) {
        throw Napi::TypeError::New(env, "job.sampling must be an object");
    }
    Napi::Object s = samplingValue.As<Napi::Object>();
    SamplingSpec & sp = job.sampling;
    sp.temperature = (float) requiredNumber(s, "temperature", "job.sampling");
    sp.topP = (float) requiredNumber(s, "topP", "job.sampling");
    sp.topK = (int32_t) requiredNumber(s, "topK", "job.sampling");
    sp.minP = (float) requiredNumber(s, "minP", "job.sampling");
    sp.repeatPenalty = (float) requiredNumber(s, "repeatPenalty", "job.sampling");
    sp.presencePenalty = (float) requiredNumber(s, "presencePenalty", "job.sampling");
    sp.frequencyPenalty = (float) requiredNumber(s, "frequencyPenalty", "job.sampling");
    sp.penaltyLastN = (int32_t) requiredNumber(s, "penaltyLastN", "job.sampling");
    sp.seed = (uint32_t) (int64_t) requiredNumber(s, "seed", "job.sampling");
    job.grammar = requiredString(j, "grammar", "job");
    job.topLogprobs = requiredInt(j, "topLogprobs", -1, 20, "job");
    job.cachePartition = requiredString(j, "cachePartition", "job");
    {
        Napi::Value p = j.Get("priority");
        if (!p.IsUndefined()) {
            const std::string priority = p.IsString() ? p.As<Napi::String>().Utf8Value() : std::string();
            if (priority != "interactive" && priority != "batch") {
                throw Napi::TypeError::New(env, "job.priority must be 'interactive' or 'batch'");
            }
            job.batch = priority == "batch";
        }
    }
    if (info.Length() >= 4 && !info[3].IsUndefined() && !info[3].IsNull()) {
        if (!info[3].IsObject()) {
            throw Napi::TypeError::New(env, "relay must be { id: number, tag: number }");
        }
        Napi::Object r = info[3].As<Napi::Object>();
        Napi::Value id = r.Get("id");
        Napi::Value tag = r.Get("tag");
        if (!id.IsNumber() || !tag.IsNumber()) {
            throw Napi::TypeError::New(env, "relay must be { id: number, tag: number }");
        }
        route.sink = findRelaySink(id.As<Napi::Number>().Uint32Value());
        route.tag = tag.As<Napi::Number>().Uint32Value();
        if (!route.sink) {
            Napi::Object refusal = Napi::Object::New(env);
            refusal.Set("code", "relay_closed");
            refusal.Set("message", "the event relay of this job is closed");
            return refusal;
        }
    }

    if (finished_ || envGone_) {
        Napi::Object refusal = Napi::Object::New(env);
        refusal.Set("code", "engine_disposed");
        refusal.Set("message", "the engine is disposed");
        return refusal;
    }
    const uint32_t jobId = job.id;
    if (route.sink) {
        std::lock_guard<std::mutex> lock(routesMutex_);
        routes_[jobId] = std::move(route);  // before the loop can send the job's first event
    }
    SubmitRefusal why;
    if (!loop_->submit(std::move(job), why)) {
        {
            std::lock_guard<std::mutex> lock(routesMutex_);
            routes_.erase(jobId);
        }
        Napi::Object refusal = Napi::Object::New(env);
        refusal.Set("code", why.code);
        refusal.Set("message", why.message);
        return refusal;
    }
    activeJobs_++;
    updateRef(env);
    return env.Undefined();
}

Napi::Value SlotLoopWrap::Cancel(const Napi::CallbackInfo & info) {
    return forJob(info, "cancel", &SlotLoop::cancel);
}

Napi::Value SlotLoopWrap::YieldSlot(const Napi::CallbackInfo & info) {
    return forJob(info, "yieldSlot", &SlotLoop::yieldSlot);
}

Napi::Value SlotLoopWrap::forJob(const Napi::CallbackInfo & info, const char * name, void (SlotLoop::*command)(uint32_t)) {
    if (info.Length() < 1 || !info[0].IsNumber()) {
        throw Napi::TypeError::New(info.Env(), std::string("usage: ") + name + "(jobId)");
    }
    if (!finished_ && !envGone_) {
        (loop_.get()->*command)(info[0].As<Napi::Number>().Uint32Value());
    }
    return info.Env().Undefined();
}

Napi::Value SlotLoopWrap::Dispose(const Napi::CallbackInfo & info) {
    if (!disposeRequested_ && !finished_ && !envGone_) {
        disposeRequested_ = true;
        updateRef(info.Env());
        closeEmbedder();
        loop_->requestStop(true);
    }
    return info.Env().Undefined();
}

Napi::Value SlotLoopWrap::Stats(const Napi::CallbackInfo & info) {
    const LoopStats st = loop_->stats();
    Napi::Object o = Napi::Object::New(info.Env());
#define HEARTH_STAT_SET(name) o.Set(#name, (double) st.name);
    HEARTH_LOOP_STATS(HEARTH_STAT_SET)
#undef HEARTH_STAT_SET
    return o;
}

void SlotLoopWrap::post(std::vector<LoopEvent> && events) {
    std::vector<LoopEvent> own;
    std::vector<std::pair<std::shared_ptr<RelaySink>, std::vector<LoopEvent>>> relayed;
    {
        std::lock_guard<std::mutex> lock(routesMutex_);
        if (routes_.empty()) {
            own = std::move(events);
        } else {
            for (auto & e : events) {
                const bool perJob = e.kind == EventKind::Prompt || e.kind == EventKind::Text || e.kind == EventKind::Done ||
                                    e.kind == EventKind::Error;
                auto route = perJob ? routes_.find(e.job) : routes_.end();
                if (route == routes_.end()) {
                    own.push_back(std::move(e));
                    continue;
                }
                const bool terminal = e.kind == EventKind::Done || e.kind == EventKind::Error;
                if (terminal) {
                    own.push_back(e);  // this thread ends its own bookkeeping of the job
                }
                auto batch = relayed.begin();
                while (batch != relayed.end() && batch->first != route->second.sink) {
                    ++batch;
                }
                if (batch == relayed.end()) {
                    relayed.emplace_back(route->second.sink, std::vector<LoopEvent>());
                    batch = relayed.end() - 1;
                }
                e.job = route->second.tag;
                batch->second.push_back(std::move(e));
                if (terminal) {
                    routes_.erase(route);
                }
            }
        }
    }
    for (auto & [sink, batch] : relayed) {
        sink->post(std::move(batch));
    }
    if (!own.empty() && mailbox_.push(std::move(own))) {
        tsfn_.NonBlockingCall();
    }
}

void SlotLoopWrap::CallJs(Napi::Env env, Napi::Function callback, SlotLoopWrap * self, void * /*data*/) {
    if (env == nullptr || self == nullptr) {
        return;  // the thread-safe function is being torn down
    }
    try {
        self->deliver(env, callback);
    } catch (...) {
        // Only when the environment is going away (a terminated worker): JavaScript cannot run any more.
    }
}

void SlotLoopWrap::deliver(Napi::Env env, Napi::Function callback) {
    std::vector<LoopEvent> events = mailbox_.take();
    if (events.empty() || finished_) {
        return;
    }
    bool disposed = false;
    for (const LoopEvent & e : events) {
        switch (e.kind) {
            case EventKind::Ready:
            case EventKind::LoadFailed:
                loading_ = false;
                break;
            case EventKind::Done:
            case EventKind::Error:
                activeJobs_--;
                break;
            case EventKind::Disposed:
                disposed = true;
                break;
            default:
                break;
        }
    }

    // Every N-API call below can fail (and throw) once the environment is terminating; the loop's own
    // bookkeeping above and the thread/TSFN release below must happen regardless.
    bool threw = false;
    Napi::Error error;
    try {
        callback.Call({ eventsToJs(env, events) });
    } catch (const Napi::Error & e) {
        threw = true;
        error = e;
    }
    if (disposed) {
        loop_->join();
        finished_ = true;
        tsfn_.Release();
    } else {
        updateRef(env);
    }
    if (threw && !error.IsEmpty()) {
        error.ThrowAsJavaScriptException();  // an onEvents bug: surfaces as this thread's uncaught exception
    }
}

void SlotLoopWrap::updateRef(Napi::Env env) {
    if (finished_ || envGone_) {
        return;
    }
    const bool want = loading_ || disposeRequested_ || activeJobs_ > 0;
    if (want != refed_) {
        // Plain Node-API calls: they only fail while the environment is torn down, and then it does not matter.
        if (want) {
            napi_ref_threadsafe_function(env, tsfn_);
        } else {
            napi_unref_threadsafe_function(env, tsfn_);
        }
        refed_ = want;
    }
}

void SlotLoopWrap::onTsfnFinalized() {
    if (selfRefHeld_ && !envGone_) {
        selfRefHeld_ = false;
        Unref();
    }
}

void SlotLoopWrap::onEnvCleanup(void * arg) {
    auto * self = static_cast<SlotLoopWrap *>(arg);
    self->envGone_ = true;
    self->closeEmbedder();
    if (self->loop_) {
        self->loop_->requestStop(true);
        self->loop_->join();
    }
}

}  // namespace hearth
