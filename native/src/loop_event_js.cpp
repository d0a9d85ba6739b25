#include "loop_event_js.h"

namespace hearth {

namespace {

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

Napi::Object readyToJs(Napi::Env env, const LoopEvent & e) {
    Napi::Object o = Napi::Object::New(env);
    o.Set("type", "ready");
    o.Set("contextSize", e.contextSize);
    o.Set("contextTotal", e.contextTotal);
    o.Set("batchSize", e.batchSize);
    o.Set("vocabSize", e.vocabSize);
    o.Set("threads", e.threads);
    o.Set("threadPool", e.threadPool);
    o.Set("cpuBackend", e.cpuBackend);
    o.Set("gpuLayers", e.gpuLayers);
    o.Set("modelLayers", e.modelLayers);
    o.Set("embeddingsOnly", e.embeddingsOnly);
    Napi::Array gpus = Napi::Array::New(env);
    for (size_t i = 0; i < e.gpuDevices.size(); i++) {
        const GpuDevice & d = e.gpuDevices[i];
        Napi::Object g = Napi::Object::New(env);
        g.Set("name", d.name);
        g.Set("description", d.description);
        g.Set("memoryFreeBytes", (double) d.memoryFree);
        g.Set("memoryTotalBytes", (double) d.memoryTotal);
        gpus.Set((uint32_t) i, g);
    }
    o.Set("gpuDevices", gpus);
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
    if (e.calibrationStep.size() == 3) {
        Napi::Object step = Napi::Object::New(env);
        step.Set("rows", e.calibrationStep[0]);
        step.Set("history", e.calibrationStep[1]);
        step.Set("jsMs", e.calibrationStep[2]);
        o.Set("calibrationStep", step);
    }
    return o;
}

}  // namespace

Napi::Array eventsToJs(Napi::Env env, const std::vector<LoopEvent> & events) {
    Napi::Array flat = Napi::Array::New(env, events.size() * kEventSlots);
    uint32_t at = 0;
    auto set = [&](uint32_t slot, napi_value v) { flat.Set(at + slot, v); };
    auto number = [&](double d) { return Napi::Number::New(env, d); };
    for (const LoopEvent & e : events) {
        set(0, number((double) e.kind));
        const bool jobEvent = e.kind == EventKind::Prompt || e.kind == EventKind::Text || e.kind == EventKind::Done ||
                              e.kind == EventKind::Error;
        if (jobEvent) {
            set(1, number(e.job));
        }
        switch (e.kind) {
            case EventKind::Ready:
                set(6, readyToJs(env, e));
                break;
            case EventKind::LoadFailed:
                set(5, Napi::String::New(env, e.text));
                break;
            case EventKind::Prompt:
                set(2, number(e.promptTokens));
                set(3, number(e.cachedTokens));
                set(4, number(e.promptSteps));
                break;
            case EventKind::Text:
                set(2, number(e.tokenCount));
                set(5, Napi::String::New(env, e.text));
                if (!e.logprobs.empty()) {
                    set(6, logprobsToJs(env, e.logprobs));
                }
                break;
            case EventKind::Done:
                set(2, number(e.promptTokens));
                set(3, number(e.cachedTokens));
                set(4, number(e.completionTokens));
                set(5, Napi::String::New(env, e.code));
                if (!e.text.empty()) {
                    set(6, Napi::String::New(env, e.text));
                }
                break;
            case EventKind::Error:
                set(5, Napi::String::New(env, e.code));
                set(6, Napi::String::New(env, e.text));
                break;
            case EventKind::Disposed:
                break;
        }
        at += kEventSlots;
    }
    return flat;
}

}  // namespace hearth
