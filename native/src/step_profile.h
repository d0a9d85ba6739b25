// Where the loop thread's time goes, step by step, printed to stderr every few seconds when HEARTH_NATIVE_PROFILE
// is set (bench:gpu reads it): batch building, llama_decode (on a GPU: building and launching the graph), waiting
// for the step's results (llama_synchronize: the GPU's own time past the launch), sampling, events to JavaScript,
// the rows per step, and the share of steps whose compute graph llama.cpp reused from the step before (no graph
// build or allocation: same rows, same sequences, same KV window). Off: one branch per step and nothing measured.
#pragma once

#include <chrono>
#include <cstdio>
#include <cstdlib>

namespace hearth {

class StepProfile {
public:
    enum Phase { Build, Decode, Sync, Sample, Emit, kPhases };

    StepProfile() : enabled_(std::getenv("HEARTH_NATIVE_PROFILE") != nullptr) {}

    bool enabled() const { return enabled_; }

    /** Starts timing a step (a no-op when off). */
    void begin() {
        if (enabled_) {
            mark_ = Clock::now();
            if (windowStart_ == Clock::time_point{}) {
                windowStart_ = mark_;
            }
        }
    }

    /** The time since the last mark goes to `phase`. */
    void lap(Phase phase) {
        if (!enabled_) {
            return;
        }
        const auto now = Clock::now();
        ms_[phase] += std::chrono::duration<double, std::milli>(now - mark_).count();
        mark_ = now;
    }

    /**
     * Ends a step of `rows` batch rows; `graphsReused` is llama.cpp's running count of reused graphs
     * (llama_perf_context().n_reused). Prints the window's figures every kWindowS seconds.
     */
    void end(int rows, long graphsReused) {
        if (!enabled_) {
            return;
        }
        steps_++;
        rows_ += rows;
        const double windowMs = std::chrono::duration<double, std::milli>(Clock::now() - windowStart_).count();
        if (windowMs < kWindowS * 1000.0) {
            return;
        }
        const double busy = ms_[Build] + ms_[Decode] + ms_[Sync] + ms_[Sample] + ms_[Emit];
        std::fprintf(stderr,
                     "hearth-native-profile steps=%ld rows_per_step=%.1f window_ms=%.0f busy_ms=%.0f build_ms=%.1f decode_ms=%.1f "
                     "sync_ms=%.1f sample_ms=%.1f emit_ms=%.1f ms_per_step=%.3f graphs_reused=%.2f\n",
                     steps_, steps_ > 0 ? (double) rows_ / (double) steps_ : 0.0, windowMs, busy, ms_[Build], ms_[Decode], ms_[Sync],
                     ms_[Sample], ms_[Emit], steps_ > 0 ? busy / (double) steps_ : 0.0,
                     steps_ > 0 ? (double) (graphsReused - reusedAtWindowStart_) / (double) steps_ : 0.0);
        std::fflush(stderr);
        steps_ = 0;
        rows_ = 0;
        reusedAtWindowStart_ = graphsReused;
        for (double & m : ms_) {
            m = 0.0;
        }
        windowStart_ = Clock::now();
    }

private:
    using Clock = std::chrono::steady_clock;
    static constexpr double kWindowS = 2.0;
    const bool enabled_;
    Clock::time_point mark_{};
    Clock::time_point windowStart_{};
    double ms_[kPhases] = {};
    long steps_ = 0;
    long rows_ = 0;
    long reusedAtWindowStart_ = 0;  // llama.cpp's count starts at 0 with the context, which lives as long as this
};

}  // namespace hearth
