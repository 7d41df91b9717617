// Text helpers for messages about names: excerpts of long values, lists of names, the closest name
// to a misspelled one, and glob patterns. Configs, model files and the tools' flags all use them.
#pragma once

#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace xb {

// The start of `text` for a message: at most `max_chars` characters, then "..." when it was cut
// (names and values from a file can be megabytes long), control characters escaped (name_text).
std::string excerpt(std::string_view text, size_t max_chars = 60);
// "unknown <what> '<name>'" with the name cut to an excerpt, then the did_you_mean hint.
std::string unknown_name(std::string_view what, std::string_view name, const std::vector<std::string>& candidates);

// "a, b, c" -- or the first `max_names` and "... (N more)" for long lists.
std::string join_names(const std::vector<std::string>& names, size_t max_names = 16);
// The candidate closest to `word` by edit distance when it is close enough to be a likely typo
// (at most a third of its letters wrong, or the same letters reordered, or one starting the other),
// else none. The tools suggest their flags with it too ("--repat" -> "--reps").
std::optional<std::string> closest_name(std::string_view word, const std::vector<std::string>& candidates);
// closest_name as the end of a message (" (did you mean 'params'?)"), else "".
std::string did_you_mean(std::string_view word, const std::vector<std::string>& candidates);

// Whether `name` matches the glob `pattern` ('*' any run of characters, '?' one character).
bool glob_match(std::string_view pattern, std::string_view name);
bool is_pattern(std::string_view name);

}  // namespace xb
