// Saving a placed model's data: its weights as GGUF (--save-weights), so that a config's random
// weights can be exported and loaded again with {"kind": "gguf"} inits, and its outputs as .npy.
#pragma once

#include <string>

#include "config/model.hpp"
#include "core/status.hpp"

namespace xb::config {

// Every weight (read from its device) into a GGUF v3 file, with general.architecture "xbackend",
// general.name, xbackend.seed and xbackend.config metadata. The model must be placed.
Status save_weights(const Model& model, const std::string& path);

// Every output into `dir`/<name>.npy (characters other than letters, digits, '.', '-' and '_'
// become '_'). The model must have been computed.
Status save_outputs(const Model& model, const std::string& dir);

}  // namespace xb::config
