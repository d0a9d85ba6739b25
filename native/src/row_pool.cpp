#include "row_pool.h"

#include "thread_name.h"

namespace hearth {

RowPool::RowPool(int threads) {
    for (int i = 1; i < threads; i++) {
        workers_.emplace_back([this] {
            nameThisThread("hearth-sample");
            work();
        });
    }
}

RowPool::~RowPool() {
    {
        std::lock_guard<std::mutex> lock(mutex_);
        stop_ = true;
    }
    wake_.notify_all();
    for (auto & t : workers_) {
        t.join();
    }
}

size_t RowPool::take(const std::function<void(size_t)> & fn, size_t n) {
    size_t done = 0;
    for (size_t i = next_.fetch_add(1, std::memory_order_relaxed); i < n; i = next_.fetch_add(1, std::memory_order_relaxed)) {
        fn(i);
        done++;
    }
    return done;
}

void RowPool::run(size_t n, const std::function<void(size_t)> & fn) {
    if (workers_.empty() || n <= 1) {
        for (size_t i = 0; i < n; i++) {
            fn(i);
        }
        return;
    }
    {
        std::lock_guard<std::mutex> lock(mutex_);
        fn_ = &fn;
        n_ = n;
        next_.store(0, std::memory_order_relaxed);
        finished_ = 0;
        generation_++;
    }
    wake_.notify_all();
    const size_t done = take(fn, n);
    std::unique_lock<std::mutex> lock(mutex_);
    finished_ += done;
    // Every row done and no worker still inside this run (none may touch `fn` after it returns).
    done_.wait(lock, [&] { return finished_ == n_ && active_ == 0; });
    fn_ = nullptr;
}

void RowPool::work() {
    uint64_t seen = 0;
    while (true) {
        const std::function<void(size_t)> * fn = nullptr;
        size_t n = 0;
        {
            std::unique_lock<std::mutex> lock(mutex_);
            wake_.wait(lock, [&] { return stop_ || generation_ != seen; });
            if (stop_) {
                return;
            }
            seen = generation_;
            if (fn_ == nullptr) {
                continue;  // woke after that run had finished
            }
            fn = fn_;
            n = n_;
            active_++;
        }
        const size_t done = take(*fn, n);
        {
            std::lock_guard<std::mutex> lock(mutex_);
            finished_ += done;
            active_--;
        }
        done_.notify_all();
    }
}

}  // namespace hearth
