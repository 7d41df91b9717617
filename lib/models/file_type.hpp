// A llama.cpp model file's type as llama.cpp names it ("Q4_K - Medium", "F16", "all F32"): what
// llama-bench's model column and llama-cli's log say, so that graph-run's model column reads the
// same for the same file. From general.file_type (llama.h's LLAMA_FTYPE_* values) where the file
// has it; otherwise guessed, as llama.cpp's loader guesses it, from the type most tensors have
// ("(guessed) Q4_0").
#pragma once

#include <cstdint>
#include <string>

#include "formats/gguf.hpp"

namespace xb {

// llama.cpp's name of a general.file_type value; "unknown, may not work" for a value it does not
// name (its own words).
std::string llama_file_type_name(int64_t file_type);

// The file's type name: general.file_type's, or the guess from its tensors' types.
std::string gguf_file_type_name(const GgufReader& file);

}  // namespace xb
