// Quantizers of the newer block formats that ggml can make without an importance matrix: q2_K,
// q3_K, iq4_nl, iq4_xs, tq1_0, tq2_0 and mxfp4. tq1_0, tq2_0 and mxfp4 are ggml's reference
// roundings, byte for byte those of the gguf package; q2_K, q3_K and the iq4 types use xbackend's
// least-squares searches, whose error is bounded per type (core/quant.hpp's
// quantization_nmse_bound, tests/core/test_quant_formats.cpp). The codebook formats (iq1, iq2, iq3)
// and nvfp4 have none: as in ggml, they are read-only.
#pragma once

#include "core/quant_formats.hpp"

namespace xb {

void quantize_block(const float* x, BlockQ2_K& b);
void quantize_block(const float* x, BlockQ3_K& b);
void quantize_block(const float* x, BlockIQ4_NL& b);
void quantize_block(const float* x, BlockIQ4_XS& b);
void quantize_block(const float* x, BlockTQ1_0& b);
void quantize_block(const float* x, BlockTQ2_0& b);
void quantize_block(const float* x, BlockMXFP4& b);

}  // namespace xb
