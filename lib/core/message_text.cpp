#include "core/message_text.hpp"

#include <cstdint>
#include <algorithm>
#include <utility>
#include <vector>

namespace xb {

namespace {

// The length of the UTF-8 character starting at text[i], and its code point; 0 when the bytes there
// are not UTF-8 (a stray continuation byte, an overlong form, a surrogate, a cut sequence).
size_t utf8_length(std::string_view text, size_t i, uint32_t& code) {
    const auto byte = [&](size_t k) { return static_cast<uint8_t>(text[k]); };
    const uint8_t b = byte(i);
    if (b < 0x80) {
        code = b;
        return 1;
    }
    const size_t n = (b & 0xE0) == 0xC0 ? 2 : (b & 0xF0) == 0xE0 ? 3 : (b & 0xF8) == 0xF0 ? 4 : 0;
    if (n == 0 || i + n > text.size()) return 0;
    code = b & (0x7F >> n);
    for (size_t k = 1; k < n; ++k) {
        if ((byte(i + k) & 0xC0) != 0x80) return 0;
        code = (code << 6) | (byte(i + k) & 0x3F);
    }
    static constexpr uint32_t kMin[] = {0, 0, 0x80, 0x800, 0x10000};
    if (code < kMin[n] || code > 0x10FFFF || (code >= 0xD800 && code <= 0xDFFF)) return 0;
    return n;
}

std::string hex_escape(uint32_t value, const char* prefix, int digits) {
    static constexpr char kHex[] = "0123456789abcdef";
    std::string out = prefix;
    for (int d = digits - 1; d >= 0; --d) out += kHex[(value >> (4 * d)) & 0xF];
    return out;
}

// Calls f(piece, begin, end) for each character of text[from, ...): its printable form (an escape,
// or the character's bytes) and where it lies in `text`, until f returns false.
template <typename F>
void for_each_piece(std::string_view text, size_t from, F f) {
    for (size_t i = from; i < text.size();) {
        uint32_t code = 0;
        const size_t n = utf8_length(text, i, code);
        std::string piece;
        if (n == 0) {
            piece = hex_escape(static_cast<uint8_t>(text[i]), "\\x", 2);
        } else if (code == '\n') {
            piece = "\\n";
        } else if (code == '\r') {
            piece = "\\r";
        } else if (code == '\t') {
            piece = "\\t";
        } else if (code < 0x20 || code == 0x7F) {
            piece = hex_escape(code, "\\x", 2);
        } else if (code >= 0x80 && code <= 0x9F) {  // C1 controls: CSI (U+009B) starts escape sequences too
            piece = hex_escape(code, "\\u", 4);
        } else {
            piece = text.substr(i, n);
        }
        const size_t next = i + std::max<size_t>(n, 1);
        if (!f(piece, i, next)) return;
        i = next;
    }
}

}  // namespace

std::string escape_controls(std::string_view text) {
    std::string out;
    for_each_piece(text, 0, [&](const std::string& piece, size_t, size_t) {
        out += piece;
        return true;
    });
    return out;
}

std::string name_text(std::string_view text, size_t max_chars) {
    std::string out;
    size_t chars = 0;
    bool cut = false;
    for_each_piece(text, 0, [&](const std::string& piece, size_t, size_t) {
        if (chars == max_chars) {
            cut = true;
            return false;
        }
        out += piece;
        ++chars;
        return true;
    });
    return cut ? out + "..." : out;
}

std::string quoted_name(std::string_view name) { return "'" + name_text(name) + "'"; }

std::string one_line(std::string_view message, size_t max_chars) {
    // The end (the reason, after the names) gets a fifth, the start the rest but for the note of
    // what was left out (at most 60 characters). Every byte prints as at least one, so the end's
    // pieces come from the last tail_budget bytes: a message of megabytes costs no more than a short one.
    constexpr size_t kNote = 60;
    const size_t tail_budget = max_chars / 5;
    const size_t head_budget = max_chars > tail_budget + kNote ? max_chars - tail_budget - kNote : 0;
    std::string head;
    size_t head_end = 0;
    bool fits = true;
    for_each_piece(message, 0, [&](const std::string& piece, size_t, size_t end) {
        if (head.size() + piece.size() > max_chars) {
            fits = false;
            return false;
        }
        head += piece;
        head_end = end;
        return true;
    });
    if (fits) return head;
    head.clear();
    head_end = 0;
    for_each_piece(message, 0, [&](const std::string& piece, size_t, size_t end) {
        if (head.size() + piece.size() > head_budget) return false;
        head += piece;
        head_end = end;
        return true;
    });
    size_t from = message.size() > tail_budget + 4 ? message.size() - tail_budget - 4 : 0;
    from = std::max(from, head_end);
    while (from > head_end && (static_cast<uint8_t>(message[from]) & 0xC0) == 0x80) --from;  // a character's start
    std::vector<std::pair<std::string, size_t>> ends;  // the pieces from `from` and where each begins
    for_each_piece(message, from, [&](const std::string& piece, size_t begin, size_t) {
        ends.emplace_back(piece, begin);
        return true;
    });
    std::string tail;
    size_t tail_begin = message.size();
    for (size_t k = ends.size(); k > 0 && tail.size() + ends[k - 1].first.size() <= tail_budget; --k) {
        tail.insert(0, ends[k - 1].first);
        tail_begin = ends[k - 1].second;
    }
    size_t left_out = 0;  // characters between the start and the end
    for_each_piece(message.substr(0, tail_begin), head_end, [&](const std::string&, size_t, size_t) {
        ++left_out;
        return true;
    });
    return head + " ... (" + std::to_string(left_out) + " characters left out) ... " + tail;
}

}  // namespace xb
