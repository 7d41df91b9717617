// Quantization and dequantization of rows of the quantized types (core/quant_blocks.hpp).
//
// Dequantization is ggml's arithmetic, bit for bit, for every type. Quantization of the legacy types
// (q4_0, q4_1, q5_0, q5_1, q8_0), tq1_0, tq2_0 and mxfp4 is ggml's reference rounding, byte for
// byte; the k-quants (q2_K .. q6_K) and iq4_nl / iq4_xs use xbackend's own search for scales and
// mins, whose error is bounded per type (tests/core/test_quant*.cpp). The codebook formats (iq1_*,
// iq2_*, iq3_*) and nvfp4 cannot be quantized, as in ggml: they are read from files (or filled with
// random valid blocks, core/quant_random.hpp). q8_K is the activation format of the k-quant dot
// products. Row lengths must be multiples of the type's block size.
#pragma once

#include <cstddef>
#include <cstdint>

#include "core/dtype.hpp"

namespace xb {

// Whether `type` can be made from f32 by quantize_row (every quantized type but the read-only ones).
bool can_quantize(DType type);

// An upper bound on the NMSE that quantizing to `type` adds to uniformly spread data: each format's
// rounding error as measured on op-check's cases, with about 1.6x to spare; 0 for a type that is
// not quantized. Two correct quantizers whose inputs differ by a few ulps stay well within it.
double quantization_nmse_bound(DType type);

// n elements of `type` at src, as f32 at dst.
void dequantize_row(DType type, const void* src, float* dst, int64_t n);
// n f32 elements at src, as `type` at dst (row_size(type, n) bytes); `type` must be can_quantize.
void quantize_row(DType type, const float* src, void* dst, int64_t n);

}  // namespace xb
