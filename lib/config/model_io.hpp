// Saving a placed model's data: its weights as GGUF (--save-weights), so that a config's random
// weights can be exported and loaded again with {"kind": "gguf"} inits, and its outputs as .npy.
#pragma once

#include <cstdint>
#include <functional>
#include <string>
#include <vector>

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

// An output that holds NaN or infinite values: two backends that both give NaN compare as equal,
// so a comparison alone passes a model of NaN weights.
struct NonFiniteOutput {
    const Tensor* tensor = nullptr;
    int64_t nan = 0, inf = 0, count = 0;
};
// A tensor's values as f32, from wherever they are (tensor_get_f32, a saved file).
using TensorValues = std::function<Result<std::vector<float>>(const Tensor&)>;
// The outputs (model.outputs) holding a NaN or an infinity, read with `values`; without it, as the
// model holds them (tensor_get_f32; outputs without data are skipped).
Result<std::vector<NonFiniteOutput>> nonfinite_outputs(const Model& model, const TensorValues& values = {});

}  // namespace xb::config
