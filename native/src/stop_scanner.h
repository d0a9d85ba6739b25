// Turns a job's stream of token pieces into text that is safe to emit: never a partial UTF-8
// character, never text that could still become the start of a stop string, never a stop string.
// Owned by one slot; used only on the loop thread.
#pragma once

#include <cstddef>
#include <string>
#include <vector>

namespace hearth {

/** Length of the longest prefix of `text` that does not end inside a multi-byte UTF-8 character. */
size_t completeUtf8Prefix(const std::string & text);

class StopScanner {
public:
    explicit StopScanner(std::vector<std::string> stops);

    /**
     * Appends one token's bytes and returns the text that can be emitted now (possibly empty).
     * When a stop string completes, stopped() becomes true: the text before it is returned and the
     * stop string and anything after it are dropped.
     */
    std::string push(const std::string & piece);

    /** Generation ended for another reason: everything still held except an incomplete UTF-8 tail. */
    std::string flush();

    bool stopped() const { return stopped_; }

    /** The stop string that completed (empty until stopped()). */
    const std::string & matched() const { return matched_; }

private:
    /** Smallest index i such that held_[i..] is a proper prefix of some stop string; held_.size() if none. */
    size_t partialStopStart() const;

    std::vector<std::string> stops_;
    std::string held_;
    bool stopped_ = false;
    std::string matched_;
};

}  // namespace hearth
