#include "event_mailbox.h"

#include <iterator>

namespace hearth {

bool EventMailbox::push(std::vector<LoopEvent> && events) {
    std::lock_guard<std::mutex> lock(mutex_);
    for (auto & e : events) {
        if (e.kind == EventKind::Text) {
            auto it = lastEventOfJob_.find(e.job);
            if (it != lastEventOfJob_.end() && events_[it->second].kind == EventKind::Text) {
                LoopEvent & joined = events_[it->second];
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
            lastEventOfJob_[e.job] = events_.size();
        }
        events_.push_back(std::move(e));
    }
    if (deliveryScheduled_ || events_.empty()) {
        return false;
    }
    deliveryScheduled_ = true;
    return true;
}

std::vector<LoopEvent> EventMailbox::take() {
    std::lock_guard<std::mutex> lock(mutex_);
    std::vector<LoopEvent> out;
    out.swap(events_);
    lastEventOfJob_.clear();
    deliveryScheduled_ = false;
    return out;
}

}  // namespace hearth
