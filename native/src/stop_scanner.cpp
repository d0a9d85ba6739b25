#include "stop_scanner.h"

#include <algorithm>

namespace hearth {

size_t completeUtf8Prefix(const std::string & text) {
    const size_t len = text.size();
    // Walk back over at most 3 continuation bytes to the byte that starts the last character.
    size_t back = 0;
    while (back < 3 && back < len && (static_cast<unsigned char>(text[len - 1 - back]) & 0xC0) == 0x80) {
        back++;
    }
    if (back == len) {
        return len;  // only continuation bytes: invalid, not incomplete; let the decoder replace them
    }
    const unsigned char lead = static_cast<unsigned char>(text[len - 1 - back]);
    size_t need = 1;
    if ((lead & 0xE0) == 0xC0) {
        need = 2;
    } else if ((lead & 0xF0) == 0xE0) {
        need = 3;
    } else if ((lead & 0xF8) == 0xF0) {
        need = 4;
    }
    const size_t have = back + 1;
    return have < need ? len - have : len;
}

StopScanner::StopScanner(std::vector<std::string> stops) {
    for (auto & s : stops) {
        if (!s.empty()) {
            stops_.push_back(std::move(s));
        }
    }
}

size_t StopScanner::partialStopStart() const {
    size_t start = held_.size();
    for (const auto & stop : stops_) {
        const size_t maxLen = std::min(held_.size(), stop.size() - 1);
        // The longest suffix of held_ that is a prefix of `stop` gives the smallest start.
        for (size_t k = maxLen; k > 0; k--) {
            if (held_.compare(held_.size() - k, k, stop, 0, k) == 0) {
                start = std::min(start, held_.size() - k);
                break;
            }
        }
    }
    return start;
}

std::string StopScanner::push(const std::string & piece) {
    if (stopped_) {
        return {};
    }
    held_ += piece;
    if (stops_.empty()) {
        const size_t n = completeUtf8Prefix(held_);
        std::string out = held_.substr(0, n);
        held_.erase(0, n);
        return out;
    }
    // Emitted text never ends with a stop prefix, so a stop string can only lie wholly inside held_.
    size_t first = std::string::npos;
    const std::string * found = nullptr;
    for (const auto & stop : stops_) {
        const size_t pos = held_.find(stop);
        if (pos != std::string::npos && pos < first) {
            first = pos;
            found = &stop;
        }
    }
    if (first != std::string::npos) {
        stopped_ = true;
        matched_ = *found;
        std::string out = held_.substr(0, first);
        held_.clear();
        return out;
    }
    const size_t n = std::min(partialStopStart(), completeUtf8Prefix(held_));
    std::string out = held_.substr(0, n);
    held_.erase(0, n);
    return out;
}

std::string StopScanner::flush() {
    if (stopped_) {
        return {};
    }
    std::string out = held_.substr(0, completeUtf8Prefix(held_));
    held_.clear();
    return out;
}

}  // namespace hearth
