// --info: what a config's model is made of, without placing or computing it. For a llama.cpp
// model file (a gguf config, or the .gguf itself as -c): its architecture, hyperparameters and
// tensors by type with their bytes; for the other configs: the graph's nodes and the weights by
// type.
#pragma once

#include <cstdint>
#include <string>

#include "cli.hpp"
#include "core/status.hpp"

namespace xb::tools {

// Writes the report in the chosen format to -o FILE or stdout.
Status write_model_info(const CommonOptions& options);

}  // namespace xb::tools
