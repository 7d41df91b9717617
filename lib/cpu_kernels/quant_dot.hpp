// Dot products of rows of quantized weights with activations, for the CPU's mul_mat, in ggml's
// style: the f32 activations are quantized once per product to 8-bit blocks (BlockQ8Sum for the
// formats of 32 or 64 values, BlockQ8_K for the 256-value super-block formats) and each weight block meets its activation block in
// integer arithmetic, scaled once per block.
//
// One table per instruction set, each in its own translation unit (quant_dot_<isa>.cpp, compiled
// for that ISA only); quant_dot() is the best one this CPU runs (core/isa.hpp).
#pragma once

#include <cstdint>

#include "core/dtype.hpp"
#include "core/q4k_x8.hpp"
#include "core/quant_blocks.hpp"
#include "core/isa.hpp"

namespace xb::cpu_kernels {

// 32 activations: x = d * q, and s = d * sum(q) for the weights' minimum terms (q4_1, q5_1); d and
// s are f16 values (core/quant_int_dot.hpp's q8_stored_scale), kept as f32 for the arithmetic.
struct BlockQ8Sum {
    float d;
    float s;
    int8_t qs[kQK];
};

// The activation block format a weight type's dot product takes.
enum class ActFormat { Q8Sum, Q8K };
ActFormat activation_format(DType weights);
// Bytes of the activation blocks of a row of n elements for `weights` (n a multiple of its block).
size_t activation_row_bytes(DType weights, int64_t n);

// The most activation rows one dot call takes: a weight row decoded once serves them all.
constexpr int kMaxDotColumns = 4;
// Columns from which a product takes the tile path instead (cpu_kernels/quant_tiles.hpp: it decodes
// each weight tile once for all).
inline constexpr int64_t kTileMinColumns = 8;

// Runs body.template operator()<N>() with N = ncols (1..kMaxDotColumns): the dot kernels take their
// column count as a template argument, so that their loops over the columns unroll.
template <typename Body>
[[gnu::always_inline]] inline void with_column_count(int ncols, Body&& body) {
    static_assert(kMaxDotColumns == 4);
    switch (ncols) {
        case 1: return body.template operator()<1>();
        case 2: return body.template operator()<2>();
        case 3: return body.template operator()<3>();
        default: return body.template operator()<4>();
    }
}

struct QuantDot {
    using QuantizeFn = void (*)(const float* x, void* blocks, int64_t n);
    // out[j] = dot(weights row, activation row j) for j < ncols (1..kMaxDotColumns), the activation
    // rows act_stride bytes apart.
    using DotFn = void (*)(int64_t n, const void* weights, const void* activations, size_t act_stride, int ncols,
                           float* out);

    // The one-token dot of 8 q4_K rows repacked together (core/q4k_x8.hpp): out[r] = dot(row r of
    // the group, activations) for r < 8, rows of n values (n / 256 BlockQ4_Kx8 from `groups`),
    // activations n / 256 BlockQ8_K (quantize_q8k's).
    using DotQ4KX8Fn = void (*)(int64_t n, const BlockQ4_Kx8* groups, const BlockQ8_K* activations, float* out);

    Isa isa;
    DotQ4KX8Fn dot_q4_K_x8;
    QuantizeFn quantize_q8sum;  // n f32 -> n / 32 BlockQ8Sum
    QuantizeFn quantize_q8k;    // n f32 -> n / 256 BlockQ8_K
    DotFn dot[kDTypeCount];     // indexed by the weight type; nullptr for non-quantized types

    // Quantizes n activations into the format `weights` takes.
    void quantize_activations(DType weights, const float* x, void* blocks, int64_t n) const {
        (activation_format(weights) == ActFormat::Q8K ? quantize_q8k : quantize_q8sum)(x, blocks, n);
    }
};

// The table of `isa` (which must be supported, see isa_supported).
const QuantDot& quant_dot(Isa isa);
// The table of the best supported instruction set.
const QuantDot& quant_dot();

// Per instruction set (quant_dot_<isa>.cpp).
const QuantDot& quant_dot_scalar();
const QuantDot& quant_dot_avx2();
// The AVX2 table with the codebook formats' and tq1_0's dots at 512 bits (needs AVX-512 VNNI and
// BMI2 as well; quant_dot checks them).
const QuantDot& quant_dot_avx512();
// Sets the AVX2 table's entries of the newer formats (q2_K, q3_K, IQ, TQ, MXFP4, NVFP4;
// quant_dot_units_avx2.cpp).
void add_unit_dots_avx2(QuantDot& table);

}  // namespace xb::cpu_kernels
