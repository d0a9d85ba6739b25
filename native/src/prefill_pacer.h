// Sizes prompt chunks by time, not by count: while slots are generating, a step that also prefills a
// prompt should take at most `ratio` times a step that only decodes, so the streams keep their cadence
// however expensive the prompt's tokens become (attention over a long prompt makes each of its tokens
// dearer as its position grows; a fixed token budget cannot follow that). Pure arithmetic on measured
// step times; loop thread only.
#pragma once

#include <algorithm>
#include <cmath>
#include <cstdint>

namespace hearth {

class PrefillPacer {
public:
    /** ratio <= 1: off (chunks are limited by the token budget alone). */
    explicit PrefillPacer(double ratio) : ratio_(ratio) {}

    bool enabled() const { return ratio_ > 1.0; }

    /**
     * Most prompt tokens the next step may take while slots are generating, at most `cap` and at least 1
     * (a prompt always makes progress). Until a decode-only step was timed, `cap`; the first paced step
     * takes kFirstChunk tokens, then what the measurements say.
     */
    int32_t promptTokens(int32_t cap) const {
        if (!enabled() || decodeMs_ <= 0.0) {
            return cap;
        }
        const double limit = limit_ > 0.0 ? limit_ : kFirstChunk;
        return std::max<int32_t>(1, std::min<int32_t>(cap, (int32_t) std::floor(limit)));
    }

    /** A step that decoded generating slots only took `ms`. */
    void decodeStep(double ms) {
        decodeMs_ = decodeMs_ <= 0.0 ? ms : 0.8 * decodeMs_ + 0.2 * ms;
    }

    /**
     * A step with `promptTokens` prompt tokens beside generating slots took `ms`. With step time taken as
     * decode time + k x prompt tokens (k grows slowly with the prompt's position), the chunk that meets
     * the ratio is (ratio - 1) x decode time / k. Over the ratio the limit drops to that at once; under
     * it, it grows at most by half per step (one cheap step is weak evidence).
     */
    void mixedStep(double ms, int32_t promptTokens, int32_t cap) {
        if (!enabled() || decodeMs_ <= 0.0 || promptTokens <= 0) {
            return;
        }
        const double extra = ms - decodeMs_;
        const double target = extra <= 0.0 ? (double) cap : (ratio_ - 1.0) * decodeMs_ * promptTokens / extra;
        const double current = limit_ > 0.0 ? limit_ : kFirstChunk;
        limit_ = std::clamp(target < current ? target : std::min(target, current * 1.5), 1.0, (double) cap);
    }

private:
    /** Prompt tokens of the first paced step, before any mixed step was timed. */
    static constexpr double kFirstChunk = 8.0;
    const double ratio_;
    /** Smoothed duration of decode-only steps (ms); 0 = none timed yet. */
    double decodeMs_ = 0.0;
    /** Current prompt-token limit; 0 = not set yet (the cap). */
    double limit_ = 0.0;
};

}  // namespace hearth
