// A mailbox of loop events between a producing thread and one JavaScript thread's deliveries.
//
// push() appends (joining a job's text to its previous undelivered text event, so a JavaScript thread
// that falls behind receives one event per job and delivery, not one per step) and says whether the
// caller must schedule a delivery: true once per batch, until take() empties the mailbox.
// Thread-safe; events keep their order per job.
#pragma once

#include <mutex>
#include <unordered_map>
#include <vector>

#include "loop_types.h"

namespace hearth {

class EventMailbox {
public:
    /** Appends events; true when no delivery is scheduled yet (the caller schedules one). */
    bool push(std::vector<LoopEvent> && events);
    /** Everything since the last take(); the next push() schedules again. */
    std::vector<LoopEvent> take();

private:
    std::mutex mutex_;
    std::vector<LoopEvent> events_;
    std::unordered_map<uint32_t, size_t> lastEventOfJob_;
    bool deliveryScheduled_ = false;
};

}  // namespace hearth
