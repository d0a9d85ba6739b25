#include "utf8_guard.h"

#include <string>
#include <string_view>

namespace hearth {

Utf8State utf8Advance(Utf8State state, unsigned char b) {
    switch (state) {
        case 0:
            if (b <= 0x7F) return 0;
            if (b >= 0xC2 && b <= 0xDF) return 1;
            if (b == 0xE0) return 3;
            if (b == 0xED) return 4;
            if (b >= 0xE1 && b <= 0xEF) return 2;
            if (b == 0xF0) return 6;
            if (b >= 0xF1 && b <= 0xF3) return 5;
            if (b == 0xF4) return 7;
            return kUtf8Invalid;
        case 1: return b >= 0x80 && b <= 0xBF ? 0 : kUtf8Invalid;
        case 2: return b >= 0x80 && b <= 0xBF ? 1 : kUtf8Invalid;
        case 3: return b >= 0xA0 && b <= 0xBF ? 1 : kUtf8Invalid;
        case 4: return b >= 0x80 && b <= 0x9F ? 1 : kUtf8Invalid;
        case 5: return b >= 0x80 && b <= 0xBF ? 2 : kUtf8Invalid;
        case 6: return b >= 0x90 && b <= 0xBF ? 2 : kUtf8Invalid;
        case 7: return b >= 0x80 && b <= 0x8F ? 2 : kUtf8Invalid;
        default: return kUtf8Invalid;
    }
}

Utf8TokenTable::Utf8TokenTable(const llama_vocab * vocab) {
    const int32_t nVocab = llama_vocab_n_tokens(vocab);
    next_.resize((size_t) nVocab * kUtf8States);
    std::string piece(64, '\0');
    for (llama_token t = 0; t < nVocab; t++) {
        Utf8State * row = &next_[(size_t) t * kUtf8States];
        if (llama_vocab_is_eog(vocab, t)) {
            for (int s = 0; s < kUtf8States; s++) {
                row[s] = s == kUtf8Boundary ? kUtf8Boundary : kUtf8Invalid;
            }
            continue;
        }
        int32_t n = llama_token_to_piece(vocab, t, piece.data(), (int32_t) piece.size(), 0, false);
        if (n < 0) {
            piece.resize((size_t) -n);
            n = llama_token_to_piece(vocab, t, piece.data(), (int32_t) piece.size(), 0, false);
        }
        // A piece holding U+FFFD itself is a decoding artifact of the vocabulary: never allowed (as in
        // the node-llama-cpp engine, which cannot tell it from bytes that are not UTF-8).
        const bool replacement = std::string_view(piece.data(), n > 0 ? (size_t) n : 0).find("\xEF\xBF\xBD") != std::string_view::npos;
        for (int s = 0; s < kUtf8States; s++) {
            Utf8State state = replacement ? kUtf8Invalid : (Utf8State) s;
            for (int32_t i = 0; i < n && state != kUtf8Invalid; i++) {
                state = utf8Advance(state, (unsigned char) piece[(size_t) i]);
            }
            row[s] = state;
        }
    }
}

}  // namespace hearth
