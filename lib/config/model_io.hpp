// Saving a placed model's data: its weights as GGUF (--save-weights), so that a config's random
// weights can be exported and loaded again with {"kind": "gguf"} inits, and its outputs as .npy.
#pragma once

#include <string>

#include "config/model.hpp"
#include "formats/npy.hpp"
#include "core/status.hpp"

namespace xb {

// A tensor's values, read from wherever it lives (any backend). Contiguous f32/f16/i32/i64 keep
// their bytes; bf16 and non-contiguous tensors are read as f32.
Result<NpyArray> npy_from_tensor(const Tensor& t);
Status save_npy(const Tensor& t, const std::string& path);

}  // namespace xb

namespace xb::config {

// Every weight (read from its device) into a GGUF v3 file, with general.architecture "xbackend",
// general.name, xbackend.seed and xbackend.config metadata. The model must be placed.
Status save_weights(const Model& model, const std::string& path);

// Every output into `dir`/<name>.npy (characters other than letters, digits, '.', '-' and '_'
// become '_'). The model must have been computed.
Status save_outputs(const Model& model, const std::string& dir);

}  // namespace xb::config
