// Stored values read exactly: every element of a row, of any storage type, as the double it stands
// for. The exact ops read their inputs through this (the F64 device's weights and activations).
#pragma once

#include <cstdint>

#include "core/dtype.hpp"

namespace xb::exact {

// n elements of `type` at src (a row: whole blocks of a quantized type) as doubles at dst. f32, f16,
// bf16 and integers widen exactly; a block format's values are its formula evaluated without
// rounding (ggml's f32 dequantization rounds the sum of q4_1/q5_1's and the k-quants' two terms).
void dequantize_row_exact(DType type, const void* src, double* dst, int64_t n);

}  // namespace xb::exact
