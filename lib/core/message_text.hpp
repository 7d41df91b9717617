// Text from files, configs, the environment and the command line made fit for a one-line message:
// a name read from a model file may be a megabyte long or hold a newline and a terminal escape
// sequence, and a message quoting it must still be one readable line. Every tool prints its errors
// and warnings through one_line(); the readers quote names with name_text().
#pragma once

#include <cstddef>
#include <string>
#include <string_view>

namespace xb {

// The longest message a tool prints on one line, and the longest name quoted in one.
inline constexpr size_t kMaxMessageChars = 1000;
inline constexpr size_t kMaxNameChars = 60;

// `text` made printable: control characters (C0, DEL, C1) escaped as \n, \r, \t or \xNN, bytes that
// are not UTF-8 as \xNN; other characters, multi-byte ones included, as they are.
std::string escape_controls(std::string_view text);

// A name for a message: escape_controls(text), cut after `max_chars` characters of the original
// (never inside a multi-byte character) with "..." when it was longer.
std::string name_text(std::string_view text, size_t max_chars = kMaxNameChars);

// name_text in single quotes: "'blk.0.attn_q.weight'".
std::string quoted_name(std::string_view name);

// A whole message on one line of at most `max_chars` characters: controls escaped, and when
// longer, its start and its end (where the reason usually is) around " ... (N characters left
// out) ... ".
std::string one_line(std::string_view message, size_t max_chars = kMaxMessageChars);

}  // namespace xb
