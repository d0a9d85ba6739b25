// EventRelay: a job's events delivered straight to another JavaScript thread than the loop's owner.
//
// `new EventRelay(onEvents)` on thread A (Hearth's main thread) registers a process-wide sink with a
// numeric `id`. A SlotLoop owned by thread B (a model worker) that gets a job with
// `extras.relay = { id, tag }` sends that job's events (prompt, text, done / error) to the sink, the job
// number replaced by `tag`; thread B then receives only the job's terminal event (done / error, text
// and statistics left out) to end its own bookkeeping. So a token crosses one thread boundary instead
// of two: no wake-up of B per step. onEvents gets arrays, at most one delivery in flight, a job's
// adjacent text joined (as the loop's own deliveries, see event_mailbox.h).
//
// Lifetime: close() (or thread A's teardown) unregisters the sink; events sent to it after that are
// dropped, while loops holding it keep working (their owner still gets terminal events). The relay
// never keeps thread A's event loop alive.
#pragma once

#include <memory>
#include <mutex>
#include <vector>

#include "event_mailbox.h"
#include "loop_types.h"
#include "napi.h"

namespace hearth {

/** Process-wide half of a relay: any thread posts, the creating JavaScript thread delivers. */
class RelaySink {
public:
    explicit RelaySink(uint32_t id) : id(id) {}
    const uint32_t id;

    /** Any thread. Dropped once closed. */
    void post(std::vector<LoopEvent> && events);

private:
    friend class EventRelayWrap;
    EventMailbox mailbox_;
    std::mutex callMutex_;             // guards tsfn_ against close()
    napi_threadsafe_function tsfn_ = nullptr;
    bool closed_ = false;
};

/** The registered sink of this id, or null once closed / never created. Any thread. */
std::shared_ptr<RelaySink> findRelaySink(uint32_t id);

class EventRelayWrap : public Napi::ObjectWrap<EventRelayWrap> {
public:
    static Napi::Function Define(Napi::Env env);

    explicit EventRelayWrap(const Napi::CallbackInfo & info);
    ~EventRelayWrap() override;

private:
    static void CallJs(napi_env env, napi_value callback, void * context, void * data);
    static void onEnvCleanup(void * self);

    Napi::Value Id(const Napi::CallbackInfo & info);
    Napi::Value Close(const Napi::CallbackInfo & info);

    /** Unregisters the sink and releases its thread-safe function. Idempotent; JavaScript thread. */
    void close();

    napi_env env_ = nullptr;
    std::shared_ptr<RelaySink> sink_;
    bool cleanupHookAdded_ = false;
};

}  // namespace hearth
