#include "slot_loop_wrap.h"

#include <iterator>
#include <string>

#include "addon_info.h"

namespace hearth {

namespace {

double numberOr(const Napi::Object & o, const char * key, double fallback) {
    Napi::Value v = o.Get(key);
    return v.IsNumber() ? v.As<Napi::Number>().DoubleValue() : fallback;
}

int32_t requiredInt(const Napi::Object & o, const char * key, int32_t min, int32_t max) {
    Napi::Value v = o.Get(key);
    if (!v.IsNumber()) {
        throw Napi::TypeError::New(o.Env(), std::string("options.") + key + " must be a number");
    }
    const double d = v.As<Napi::Number>().DoubleValue();
    if (!(d >= min && d <= max) || d != (double) (int64_t) d) {
        throw Napi::RangeError::New(o.Env(), std::string("options.") + key + " must be an integer in [" +
                                    std::to_string(min) + ", " + std::to_string(max) + "]");
    }
    return (int32_t) d;
}

std::string requiredString(const Napi::Object & o, const char * key) {
    Napi::Value v = o.Get(key);
    if (!v.IsString()) {
        throw Napi::TypeError::New(o.Env(), std::string("options.") + key + " must be a string");
    }
    return v.As<Napi::String>().Utf8Value();
}

Napi::Array bytesOf(Napi::Env env, const std::string & piece) {
    Napi::Array bytes = Napi::Array::New(env, piece.size());
    for (size_t i = 0; i < piece.size(); i++) {
        bytes.Set((uint32_t) i, (double) (uint8_t) piece[i]);
    }
    return bytes;
}

/** { token, logprob, bytes, top: [{ token, logprob, bytes }] } per entry (OpenAI's logprobs.content shape). */
Napi::Array logprobsToJs(Napi::Env env, const std::vector<TokenLogprob> & entries) {
    Napi::Array out = Napi::Array::New(env, entries.size());
    for (size_t i = 0; i < entries.size(); i++) {
        const TokenLogprob & entry = entries[i];
        Napi::Object o = Napi::Object::New(env);
        o.Set("token", Napi::String::New(env, entry.piece));
        o.Set("logprob", (double) entry.logprob);
        o.Set("bytes", bytesOf(env, entry.piece));
        Napi::Array top = Napi::Array::New(env, entry.top.size());
        for (size_t k = 0; k < entry.top.size(); k++) {
            Napi::Object alt = Napi::Object::New(env);
            alt.Set("token", Napi::String::New(env, entry.top[k].piece));
            alt.Set("logprob", (double) entry.top[k].logprob);
            alt.Set("bytes", bytesOf(env, entry.top[k].piece));
            top.Set((uint32_t) k, alt);
        }
        o.Set("top", top);
        out.Set((uint32_t) i, o);
    }
    return out;
}

Napi::Object toJs(Napi::Env env, const LoopEvent & e) {
    Napi::Object o = Napi::Object::New(env);
    switch (e.kind) {
        case EventKind::Ready:
            o.Set("type", "ready");
            o.Set("contextSize", e.contextSize);
            o.Set("contextTotal", e.contextTotal);
            o.Set("batchSize", e.batchSize);
            o.Set("vocabSize", e.vocabSize);
            o.Set("threads", e.threads);
            o.Set("threadPool", e.threadPool);
            o.Set("cpuBackend", e.cpuBackend);
            if (!e.calibration.empty()) {
                Napi::Array timings = Napi::Array::New(env);
                for (size_t i = 0; i + 2 < e.calibration.size(); i += 3) {
                    Napi::Object t = Napi::Object::New(env);
                    t.Set("threads", e.calibration[i]);
                    t.Set("msPerStep", e.calibration[i + 1]);
                    t.Set("estimateMs", e.calibration[i + 2]);
                    timings.Set((uint32_t) (i / 3), t);
                }
                o.Set("calibration", timings);
            }
            break;
        case EventKind::LoadFailed:
            o.Set("type", "loadFailed");
            o.Set("message", e.text);
            break;
        case EventKind::Prompt:
            o.Set("type", "prompt");
            o.Set("job", e.job);
            o.Set("promptTokens", e.promptTokens);
            o.Set("cachedTokens", e.cachedTokens);
            o.Set("promptSteps", e.promptSteps);
            break;
        case EventKind::Text:
            o.Set("type", "text");
            o.Set("job", e.job);
            o.Set("text", Napi::String::New(env, e.text));
            o.Set("tokens", e.tokenCount);
            if (!e.logprobs.empty()) {
                o.Set("logprobs", logprobsToJs(env, e.logprobs));
            }
            break;
        case EventKind::Done:
            o.Set("type", "done");
            o.Set("job", e.job);
            o.Set("finishReason", e.code);
            o.Set("promptTokens", e.promptTokens);
            o.Set("cachedTokens", e.cachedTokens);
            o.Set("completionTokens", e.completionTokens);
            break;
        case EventKind::Error:
            o.Set("type", "error");
            o.Set("job", e.job);
            o.Set("code", e.code);
            o.Set("message", e.text);
            break;
        case EventKind::Disposed:
            o.Set("type", "disposed");
            break;
    }
    return o;
}

}  // namespace

Napi::Function SlotLoopWrap::Define(Napi::Env env) {
    return DefineClass(env, "SlotLoop", {
        InstanceMethod<&SlotLoopWrap::Submit>("submit"),
        InstanceMethod<&SlotLoopWrap::Cancel>("cancel"),
        InstanceMethod<&SlotLoopWrap::Dispose>("dispose"),
        InstanceMethod<&SlotLoopWrap::Stats>("stats"),
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
    options.contextSize = requiredInt(o, "contextSize", 8, 1 << 24);
    options.slots = requiredInt(o, "slots", 1, (int32_t) llama_max_parallel_sequences());
    options.threads = requiredInt(o, "threads", 1, 1024);
    options.threadsBatch = o.Get("threadsBatch").IsUndefined() ? options.threads : requiredInt(o, "threadsBatch", 1, 1024);
    options.batchSize = o.Get("batchSize").IsUndefined() ? 512 : requiredInt(o, "batchSize", 1, 1 << 20);
    options.kvUnified = o.Get("kvUnified").ToBoolean().Value();
    options.weightRepack = o.Get("weightRepack").IsUndefined() ? true : o.Get("weightRepack").ToBoolean().Value();
    options.persistentThreads = o.Get("threadPool").IsUndefined() ? true : o.Get("threadPool").ToBoolean().Value();
    options.threadPoll = o.Get("threadPoll").IsUndefined() ? options.threadPoll : requiredInt(o, "threadPoll", 0, 100);
    options.stepTokenBudget = o.Get("stepTokenBudget").IsUndefined() ? 0 : requiredInt(o, "stepTokenBudget", 0, 1 << 20);
    options.promptCacheBytes = o.Get("promptCacheMiB").IsUndefined() ? 0 : (int64_t) requiredInt(o, "promptCacheMiB", 0, 1 << 20) << 20;
    options.calibrateCores = o.Get("calibrateCores").IsUndefined() ? 0 : requiredInt(o, "calibrateCores", 0, 4096);
    options.calibrateJsStepMs = numberOr(o, "calibrateJsStepMs", options.calibrateJsStepMs);

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
    if (info.Length() < 5 || !info[0].IsNumber() || !info[1].IsTypedArray() || !info[2].IsNumber() || !info[3].IsArray() ||
        !info[4].IsObject()) {
        throw Napi::TypeError::New(env, "usage: submit(jobId, tokens: Uint32Array | Int32Array, maxTokens, stops: string[], sampling, extras?)");
    }
    JobSpec job;
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
    const double maxTokens = info[2].As<Napi::Number>().DoubleValue();
    job.maxTokens = maxTokens >= 2147483647.0 ? 2147483647 : (int32_t) std::max(1.0, maxTokens);
    Napi::Array stops = info[3].As<Napi::Array>();
    for (uint32_t i = 0; i < stops.Length(); i++) {
        Napi::Value s = stops.Get(i);
        if (!s.IsString()) {
            throw Napi::TypeError::New(env, "stops must be strings");
        }
        job.stops.push_back(s.As<Napi::String>().Utf8Value());
    }
    Napi::Object s = info[4].As<Napi::Object>();
    SamplingSpec & sp = job.sampling;
    sp.temperature = (float) numberOr(s, "temperature", sp.temperature);
    sp.topP = (float) numberOr(s, "topP", sp.topP);
    sp.topK = (int32_t) numberOr(s, "topK", sp.topK);
    sp.minP = (float) numberOr(s, "minP", sp.minP);
    sp.repeatPenalty = (float) numberOr(s, "repeatPenalty", sp.repeatPenalty);
    sp.presencePenalty = (float) numberOr(s, "presencePenalty", sp.presencePenalty);
    sp.frequencyPenalty = (float) numberOr(s, "frequencyPenalty", sp.frequencyPenalty);
    sp.penaltyLastN = (int32_t) numberOr(s, "penaltyLastN", sp.penaltyLastN);
    sp.seed = (uint32_t) (int64_t) numberOr(s, "seed", sp.seed);
    if (info.Length() >= 6 && info[5].IsObject()) {
        Napi::Object extras = info[5].As<Napi::Object>();
        Napi::Value grammar = extras.Get("grammar");
        if (grammar.IsString()) {
            job.grammar = grammar.As<Napi::String>().Utf8Value();
        } else if (!grammar.IsUndefined()) {
            throw Napi::TypeError::New(env, "extras.grammar must be a string");
        }
        Napi::Value top = extras.Get("topLogprobs");
        if (top.IsNumber()) {
            const double n = top.As<Napi::Number>().DoubleValue();
            if (!(n >= 0 && n <= 20) || n != (double) (int32_t) n) {
                throw Napi::RangeError::New(env, "extras.topLogprobs must be an integer in [0, 20]");
            }
            job.topLogprobs = (int32_t) n;
        } else if (!top.IsUndefined()) {
            throw Napi::TypeError::New(env, "extras.topLogprobs must be a number");
        }
    }

    if (finished_ || envGone_) {
        Napi::Object refusal = Napi::Object::New(env);
        refusal.Set("code", "engine_disposed");
        refusal.Set("message", "the engine is disposed");
        return refusal;
    }
    SubmitRefusal why;
    if (!loop_->submit(std::move(job), why)) {
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
    if (info.Length() < 1 || !info[0].IsNumber()) {
        throw Napi::TypeError::New(info.Env(), "usage: cancel(jobId)");
    }
    if (!finished_ && !envGone_) {
        loop_->cancel(info[0].As<Napi::Number>().Uint32Value());
    }
    return info.Env().Undefined();
}

Napi::Value SlotLoopWrap::Dispose(const Napi::CallbackInfo & info) {
    if (!disposeRequested_ && !finished_ && !envGone_) {
        disposeRequested_ = true;
        updateRef(info.Env());
        loop_->requestStop(true);
    }
    return info.Env().Undefined();
}

Napi::Value SlotLoopWrap::Stats(const Napi::CallbackInfo & info) {
    const LoopStats st = loop_->stats();
    Napi::Object o = Napi::Object::New(info.Env());
    o.Set("steps", (double) st.steps);
    o.Set("promptTokens", (double) st.promptTokens);
    o.Set("generatedTokens", (double) st.generatedTokens);
    o.Set("migrations", (double) st.migrations);
    o.Set("promptCacheRestores", (double) st.promptCacheRestores);
    return o;
}

void SlotLoopWrap::post(std::vector<LoopEvent> && events) {
    bool schedule = false;
    {
        std::lock_guard<std::mutex> lock(mailboxMutex_);
        for (auto & e : events) {
            if (e.kind == EventKind::Text) {
                auto it = lastEventOfJob_.find(e.job);
                if (it != lastEventOfJob_.end() && mailbox_[it->second].kind == EventKind::Text) {
                    LoopEvent & joined = mailbox_[it->second];
                    joined.text += e.text;
                    joined.tokenCount += e.tokenCount;
                    if (!e.logprobs.empty()) {
                        joined.logprobs.insert(joined.logprobs.end(), std::make_move_iterator(e.logprobs.begin()),
                                               std::make_move_iterator(e.logprobs.end()));
                    }
                    continue;
                }
            }
            if (e.kind != EventKind::Ready && e.kind != EventKind::LoadFailed && e.kind != EventKind::Disposed) {
                lastEventOfJob_[e.job] = mailbox_.size();
            }
            mailbox_.push_back(std::move(e));
        }
        if (!deliveryScheduled_ && !mailbox_.empty()) {
            deliveryScheduled_ = true;
            schedule = true;
        }
    }
    if (schedule) {
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
    std::vector<LoopEvent> events;
    {
        std::lock_guard<std::mutex> lock(mailboxMutex_);
        events.swap(mailbox_);
        lastEventOfJob_.clear();
        deliveryScheduled_ = false;
    }
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
        Napi::Array array = Napi::Array::New(env, events.size());
        for (size_t i = 0; i < events.size(); i++) {
            array.Set((uint32_t) i, toJs(env, events[i]));
        }
        callback.Call({ array });
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
    if (self->loop_) {
        self->loop_->requestStop(true);
        self->loop_->join();
    }
}

}  // namespace hearth
