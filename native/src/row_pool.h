// A small pool of threads that runs one "for each row" job at a time with the calling thread taking part:
// the slot loop samples its output rows in parallel with it when the model computes on a GPU (64 rows of a 32k
// vocabulary are ~3-7 ms of CPU work per step there, while the GPU waits). Rows are handed out one at a time
// from an atomic counter; run() returns when every row is done. Not reentrant; one owner thread calls run().
#pragma once

#include <atomic>
#include <cstdint>
#include <condition_variable>
#include <cstddef>
#include <functional>
#include <mutex>
#include <thread>
#include <vector>

namespace hearth {

class RowPool {
public:
    /** `threads` in all, the caller included (1 = no extra thread: run() loops on the caller). */
    explicit RowPool(int threads);
    ~RowPool();
    RowPool(const RowPool &) = delete;
    RowPool & operator=(const RowPool &) = delete;

    int threads() const { return (int) workers_.size() + 1; }

    /** Calls fn(i) for every i in [0, n), on this thread and the pool's, and returns when all are done. */
    void run(size_t n, const std::function<void(size_t)> & fn);

private:
    void work();
    /** Takes rows of the current run until none is left; returns how many it did. */
    size_t take(const std::function<void(size_t)> & fn, size_t n);

    std::vector<std::thread> workers_;
    std::mutex mutex_;
    std::condition_variable wake_;
    std::condition_variable done_;
    const std::function<void(size_t)> * fn_ = nullptr;
    size_t n_ = 0;
    std::atomic<size_t> next_{0};
    size_t finished_ = 0;        // rows done (under mutex_)
    int active_ = 0;             // workers inside the current run (under mutex_)
    uint64_t generation_ = 0;    // bumped per run(); workers wait for a new one
    bool stop_ = false;
};

}  // namespace hearth
