// How far a correct backend's product may be from exact because it rounds its activations: every
// CPU backend (ggml's and xbackend's) multiplies quantized weights by activations rounded to 8-bit
// blocks (q8_0 for the 32-value formats, q8_K for the 256-value ones), and f16 or bf16 weights by
// activations rounded to that type. On real models the error that makes depends on the data: an
// outlier channel (Gemma's residual stream holds values a thousand times the rest) sets its block's
// step, and the product's error is 1e-4 to 1e-3 where uniform data gives 1e-5. A product's tolerance
// follows it (node_checks.cpp): the rounding is emulated on the reference's own values.
#pragma once

#include <optional>

#include "core/status.hpp"
#include "core/tensor.hpp"

namespace xb::tools {

// The activation type a product's weights make a CPU round its activations to: q8_K for the formats
// of 256-value blocks, q8_0 for the other quantized ones, the weights' own type for f16 and bf16;
// nullopt for f32 weights (nothing rounds).
std::optional<DType> activation_rounding_type(DType weights);

// For a mul_mat or mul_mat_id node whose weights (src0) round its activations (src1): the NMSE of
// W (r(x) - x) against the node's values W x, where r rounds each column of x as
// activation_rounding_type says, read from the tensors as they are (the reference's side). nullopt for
// other nodes, f32 weights, and batched products (attention's, whose operands are both activations).
Result<std::optional<double>> activation_rounding_nmse(const Tensor& node);

}  // namespace xb::tools
