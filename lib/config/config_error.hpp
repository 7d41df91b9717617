// Messages for bad configs: every one names the config file and the JSON pointer of the value at
// fault ("configs/x.json: /graph/7/args/1: unknown tensor 'foo' (known: a, b)").
#pragma once

#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "core/status.hpp"

namespace xb::config {

// InvalidArgument "<source>: <path>: <message>" (the path is left out when empty).
Status config_error(std::string_view source, std::string_view path, std::string_view message);
// The same with another status code (NotFound for missing files and devices).
Status config_error(StatusCode code, std::string_view source, std::string_view path, std::string_view message);

// One JSON pointer segment: '~' and '/' escaped as RFC 6901 says.
std::string pointer_segment(std::string_view key);
// path + "/" + escaped key.
std::string child_path(std::string_view path, std::string_view key);
std::string child_path(std::string_view path, size_t index);

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

}  // namespace xb::config
