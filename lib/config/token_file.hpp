// Token ids from a file, the way users have them: llama.cpp's llama-tokenize writes a JSON array
// ([2, 818, 5279]), other tools one id a line. A llama.cpp model's batch can be given so, by the
// config ("tokens": "file") or on the command line (--tokens FILE).
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "core/status.hpp"

namespace xb::config {

// The ids a token file holds: a JSON array of integers, or integers separated by white space (one a
// line). Empty, non-numeric or negative entries and ids beyond int32 are InvalidArgument naming the
// file and the first bad entry; a file that does not open is NotFound.
Result<std::vector<int32_t>> read_token_file(const std::string& path);

// Ids given as text: "2,818,5279" (at least one), for --tokens; InvalidArgument otherwise.
Result<std::vector<int32_t>> parse_token_list(const std::string& text);

}  // namespace xb::config
