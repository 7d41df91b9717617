#include "core/names.hpp"

#include <algorithm>
#include <cctype>

#include "core/message_text.hpp"

namespace xb {

std::string excerpt(std::string_view text, size_t max_chars) { return name_text(text, max_chars); }

std::string unknown_name(std::string_view what, std::string_view name, const std::vector<std::string>& candidates) {
    return "unknown " + std::string(what) + " '" + excerpt(name) + "'" + did_you_mean(name, candidates);
}

std::string join_names(const std::vector<std::string>& names, size_t max_names) {
    std::string out;
    const size_t shown = std::min(names.size(), max_names);
    for (size_t i = 0; i < shown; ++i) out += (i ? ", " : "") + names[i];
    if (shown < names.size()) out += ", ... (" + std::to_string(names.size() - shown) + " more)";
    if (names.empty()) out = "none";
    return out;
}

namespace {

// Edit distance counting an adjacent transposition as one edit ("grpah" -> "graph").
// Optimal string alignment distance (edits plus adjacent transpositions), three rolling rows kept
// in `rows` so that comparing a word with thousands of candidates allocates nothing per candidate.
size_t edit_distance(std::string_view a, std::string_view b, std::vector<size_t>& rows) {
    const size_t w = b.size() + 1;
    rows.assign(3 * w, 0);
    size_t* before = rows.data();  // row i - 2
    size_t* prev = before + w;     // row i - 1
    size_t* cur = prev + w;        // row i
    for (size_t j = 0; j < w; ++j) prev[j] = j;
    for (size_t i = 1; i <= a.size(); ++i) {
        cur[0] = i;
        for (size_t j = 1; j < w; ++j) {
            cur[j] = std::min({prev[j] + 1, cur[j - 1] + 1, prev[j - 1] + (a[i - 1] == b[j - 1] ? 0 : 1)});
            if (i > 1 && j > 1 && a[i - 1] == b[j - 2] && a[i - 2] == b[j - 1]) cur[j] = std::min(cur[j], before[j - 2] + 1);
        }
        std::swap(before, prev);  // the old i - 2 row becomes scratch for the next row
        std::swap(prev, cur);
    }
    return prev[b.size()];
}

// The letters and digits of a word, sorted: "matmul" and "mul_mat" are the same word reordered.
std::string letters(std::string_view w) {
    std::string out;
    for (char c : w) {
        if (std::isalnum(static_cast<unsigned char>(c))) out += static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
    }
    std::sort(out.begin(), out.end());
    return out;
}

bool starts_with(std::string_view s, std::string_view prefix) { return s.substr(0, prefix.size()) == prefix; }

}  // namespace

std::optional<std::string> closest_name(std::string_view word, const std::vector<std::string>& candidates) {
    // Names are short: a long word is no misspelling, and its distances would cost
    // O(length x candidates) each.
    constexpr size_t kMaxWord = 64;
    if (word.size() > kMaxWord) return std::nullopt;
    const size_t max_distance = std::max<size_t>(1, word.size() / 3);
    const std::string* best = nullptr;
    size_t best_distance = 0;
    std::vector<size_t> rows;
    for (const std::string& c : candidates) {
        // The distance is at least the difference in length: skip what cannot be close.
        const size_t gap = c.size() > word.size() ? c.size() - word.size() : word.size() - c.size();
        if (gap > max_distance || c.size() > 4 * kMaxWord) continue;
        const size_t d = edit_distance(word, c, rows);
        if (best == nullptr || d < best_distance) {
            best = &c;
            best_distance = d;
        }
    }
    // Close spellings (a third of the word's length catches a transposition or a missing letter).
    if (best != nullptr && best_distance > 0 && best_distance <= max_distance) return *best;
    // The same letters reordered, or a word that starts the other ("epsilon" for "eps").
    for (const std::string& c : candidates) {
        const bool shuffled = word.size() >= 3 && c != word && letters(c) == letters(word);
        const bool prefix = std::min(c.size(), word.size()) >= 3 && c != word && (starts_with(c, word) || starts_with(word, c));
        if (shuffled || prefix) return c;
    }
    return std::nullopt;
}

std::string did_you_mean(std::string_view word, const std::vector<std::string>& candidates) {
    const std::optional<std::string> best = closest_name(word, candidates);
    return best ? " (did you mean '" + *best + "'?)" : "";
}

bool glob_match(std::string_view pattern, std::string_view name) {
    size_t p = 0, n = 0, star = std::string_view::npos, resume = 0;
    while (n < name.size()) {
        if (p < pattern.size() && (pattern[p] == '?' || pattern[p] == name[n])) {
            ++p;
            ++n;
        } else if (p < pattern.size() && pattern[p] == '*') {
            star = p++;
            resume = n;
        } else if (star != std::string_view::npos) {
            p = star + 1;
            n = ++resume;
        } else {
            return false;
        }
    }
    while (p < pattern.size() && pattern[p] == '*') ++p;
    return p == pattern.size();
}

bool is_pattern(std::string_view name) { return name.find_first_of("*?") != std::string_view::npos; }

}  // namespace xb
