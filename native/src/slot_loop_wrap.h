// The JavaScript face of a SlotLoop: `new SlotLoop(options, onEvents)` with submit / cancel / dispose.
//
// Threads and lifetime: created, called and finalized on one JavaScript thread (a worker_thread or the
// main thread); the SlotLoop it owns runs on its own thread and posts events into a mailbox here. At
// most one thread-safe-function call is in flight: it drains the whole mailbox and calls onEvents once
// with an array, so every step's events for all slots cross in one call (steps that finish while
// JavaScript is busy are merged, a job's adjacent text pieces joined). The thread-safe function keeps
// the event loop alive only while the model loads, jobs run, or a dispose is pending.
// A job submitted with extras.relay sends its events to that EventRelay instead (event_relay.h); this
// thread then gets only the job's terminal event.
// dispose() ends with a 'disposed' event, after which the object is inert. If the environment is torn
// down first (worker terminated, process exit), a cleanup hook stops and joins the loop thread.
#pragma once

#include <memory>
#include <mutex>
#include <unordered_map>
#include <vector>

#include "embedder.h"
#include "event_mailbox.h"
#include "event_relay.h"
#include "napi.h"
#include "slot_loop.h"

namespace hearth {

class SlotLoopWrap : public Napi::ObjectWrap<SlotLoopWrap> {
public:
    static Napi::Function Define(Napi::Env env);

    explicit SlotLoopWrap(const Napi::CallbackInfo & info);
    ~SlotLoopWrap() override;

private:
    static void CallJs(Napi::Env env, Napi::Function callback, SlotLoopWrap * self, void * data);
    using Tsfn = Napi::TypedThreadSafeFunction<SlotLoopWrap, void, CallJs>;

    Napi::Value Submit(const Napi::CallbackInfo & info);
    Napi::Value Cancel(const Napi::CallbackInfo & info);
    Napi::Value YieldSlot(const Napi::CallbackInfo & info);
    /** `usage: name(jobId)` checked, then `command` on the loop unless it has finished. */
    Napi::Value forJob(const Napi::CallbackInfo & info, const char * name, void (SlotLoop::*command)(uint32_t));
    Napi::Value Dispose(const Napi::CallbackInfo & info);
    Napi::Value Stats(const Napi::CallbackInfo & info);
    /**
     * embed(inputs: Uint32Array[]) -> Promise<{vectors: Float32Array, dimensions, passes}>: the inputs' unit
     * vectors (embedder.h), computed off this thread (a Node-API async worker) on the loop's model while the
     * loop goes on generating. Rejects with an Error whose `code` is engine_not_ready, engine_disposed,
     * invalid_input or embedding_failed.
     */
    Napi::Value Embed(const Napi::CallbackInfo & info);
    /** Aborts an embedding pass in flight, waits for it and frees the embedding context: before the model goes. */
    void closeEmbedder();

    /** Loop thread: appends events and schedules a delivery unless one is pending. */
    void post(std::vector<LoopEvent> && events);
    /** JavaScript thread: hands everything in the mailbox to onEvents. */
    void deliver(Napi::Env env, Napi::Function callback);
    void updateRef(Napi::Env env);
    void onTsfnFinalized();
    static void onEnvCleanup(void * self);

    napi_env env_ = nullptr;
    std::unique_ptr<SlotLoop> loop_;
    Tsfn tsfn_;

    EventMailbox mailbox_;

    /** Created at the first embed() (its context at the first pass); shared with the async workers running it. */
    std::shared_ptr<Embedder> embedder_;
    int32_t embedMaxTokens_ = 0;
    int32_t embedThreads_ = 1;

    /** Where a relayed job's events go (extras.relay); the loop thread reads it, submit() adds to it. */
    struct Route {
        std::shared_ptr<RelaySink> sink;
        uint32_t tag = 0;
    };
    std::mutex routesMutex_;
    std::unordered_map<uint32_t, Route> routes_;

    // JavaScript thread only.
    int32_t activeJobs_ = 0;
    bool loading_ = true;
    bool disposeRequested_ = false;
    bool finished_ = false;  // 'disposed' delivered and the thread-safe function released
    bool envGone_ = false;   // the environment cleanup hook ran
    bool refed_ = true;
    bool cleanupHookAdded_ = false;
    bool selfRefHeld_ = false;
};

}  // namespace hearth
