// SlotLoopWrap::embed (slot_loop_wrap.h): the JavaScript face of the Embedder (embedder.h). The inputs are
// copied on the JavaScript thread, the passes run on a Node-API async worker (libuv's thread pool), and the
// promise settles back on the JavaScript thread with one Float32Array of every input's vector in order.
// dispose() aborts a pass in flight (closeEmbedder). A thread terminated without dispose ends only once the
// embedding in flight has: Node finishes thread-pool work before it runs the environment's cleanup hooks.
#include <cstring>

#include "slot_loop_wrap.h"

namespace hearth {

namespace {

Napi::Error embedError(Napi::Env env, const std::string & code, const std::string & message) {
    Napi::Error e = Napi::Error::New(env, message);
    e.Set("code", Napi::String::New(env, code));
    return e;
}

class EmbedWorker : public Napi::AsyncWorker {
public:
    EmbedWorker(Napi::Env env, std::shared_ptr<Embedder> embedder, std::vector<std::vector<llama_token>> && inputs)
        : Napi::AsyncWorker(env, "hearth-embed"), deferred_(Napi::Promise::Deferred::New(env)), embedder_(std::move(embedder)),
          inputs_(std::move(inputs)) {}

    Napi::Promise promise() const { return deferred_.Promise(); }

protected:
    void Execute() override {
        if (!embedder_->embed(inputs_, result_, failure_)) {
            SetError(failure_.message);  // settled in OnError with failure_.code
        }
    }

    void OnOK() override {
        Napi::Env env = Env();
        Napi::ArrayBuffer buffer = Napi::ArrayBuffer::New(env, result_.vectors.size() * sizeof(float));
        if (!result_.vectors.empty()) {
            std::memcpy(buffer.Data(), result_.vectors.data(), result_.vectors.size() * sizeof(float));
        }
        Napi::Object o = Napi::Object::New(env);
        o.Set("vectors", Napi::Float32Array::New(env, result_.vectors.size(), buffer, 0));
        o.Set("dimensions", (double) result_.dimensions);
        o.Set("passes", (double) result_.passes);
        deferred_.Resolve(o);
    }

    void OnError(const Napi::Error &) override {
        deferred_.Reject(embedError(Env(), failure_.code, failure_.message).Value());
    }

private:
    Napi::Promise::Deferred deferred_;
    std::shared_ptr<Embedder> embedder_;
    std::vector<std::vector<llama_token>> inputs_;
    EmbedResult result_;
    EmbedFailure failure_;
};

}  // namespace

Napi::Value SlotLoopWrap::Embed(const Napi::CallbackInfo & info) {
    Napi::Env env = info.Env();
    if (info.Length() < 1 || !info[0].IsArray()) {
        throw Napi::TypeError::New(env, "usage: embed(inputs: Uint32Array[])");
    }
    Napi::Array list = info[0].As<Napi::Array>();
    std::vector<std::vector<llama_token>> inputs(list.Length());
    for (uint32_t i = 0; i < list.Length(); i++) {
        Napi::Value v = list.Get(i);
        if (!v.IsTypedArray() || v.As<Napi::TypedArray>().TypedArrayType() != napi_uint32_array) {
            throw Napi::TypeError::New(env, "embed: every input must be a Uint32Array");
        }
        Napi::Uint32Array a = v.As<Napi::Uint32Array>();
        inputs[i].resize(a.ElementLength());
        for (size_t j = 0; j < a.ElementLength(); j++) {
            inputs[i][j] = a[j] > 0x7fffffffu ? -1 : (llama_token) a[j];  // out of range: refused by embed()
        }
    }
    Napi::Promise::Deferred refused = Napi::Promise::Deferred::New(env);
    if (finished_ || envGone_ || disposeRequested_) {
        refused.Reject(embedError(env, "engine_disposed", "the engine is disposed").Value());
        return refused.Promise();
    }
    if (!embedder_) {
        llama_model * model = loop_->model();
        if (model == nullptr) {
            refused.Reject(embedError(env, "engine_not_ready", "the model is not loaded yet").Value());
            return refused.Promise();
        }
        embedder_ = std::make_shared<Embedder>(model, embedMaxTokens_, embedThreads_);
    }
    auto * worker = new EmbedWorker(env, embedder_, std::move(inputs));  // deletes itself once settled
    Napi::Promise promise = worker->promise();
    worker->Queue();
    return promise;
}

void SlotLoopWrap::closeEmbedder() {
    if (embedder_) {
        embedder_->close();
    }
}

}  // namespace hearth
