// The CPU's dot products of the newer block formats (q2_K, q3_K, IQ, TQ, MXFP4, NVFP4) with 8-bit
// activations (BlockQ8Sum, one per 32 values): each 32-value unit of a weight row is decoded once by
// its format's decode_unit (core/quant_unit.hpp, the code the GPU runs too) and meets up to
// kMaxDotColumns activation rows; the 32 integer products are the instruction set's (IntDot).
//
// The portable table's (quant_dot_scalar.cpp, which supplies IntDot:
//     static void dot(const int8_t* w, const int8_t* a, int& lo, int& hi);  // sum w*a over 0..15, 16..31
// ); the AVX2 table has its own register-resident version (quant_dot_avx2.cpp).
#pragma once

#include <cstddef>
#include <cstdint>

#include "core/quant_block_types.hpp"
#include "cpu_kernels/quant_dot.hpp"

namespace xb::cpu_kernels {

// The formats whose units carry offsets (q2_K's minima), which need the activations' sums.
template <typename Block>
inline constexpr bool kUnitOffsets = std::is_same_v<Block, BlockQ2_K>;

inline int sum_i8(const int8_t* a, int n) {
    int s = 0;
    for (int i = 0; i < n; ++i) s += a[i];
    return s;
}

template <typename Block, typename IntDot>
void dot_units(int64_t n, const void* weights, const void* act, size_t act_stride, int ncols, float* out) {
    constexpr int kUnits = Block::kElems / kUnitValues;
    const auto* w = static_cast<const Block*>(weights);
    float sums[kMaxDotColumns] = {};
    for (int64_t b = 0; b < n / Block::kElems; ++b) {
        for (int u = 0; u < kUnits; ++u) {
            QuantUnit unit;
            decode_unit(w[b], u, unit);
            const int64_t block = b * kUnits + u;  // the activation block of this unit
            for (int c = 0; c < ncols; ++c) {
                const BlockQ8Sum& a =
                    reinterpret_cast<const BlockQ8Sum*>(static_cast<const std::byte*>(act) + act_stride * static_cast<size_t>(c))[block];
                int lo = 0, hi = 0;
                IntDot::dot(unit.q, a.qs, lo, hi);
                float s = unit.scale[0] * static_cast<float>(lo) + unit.scale[1] * static_cast<float>(hi);
                if constexpr (kUnitOffsets<Block>) {
                    s += unit.offset[0] * static_cast<float>(sum_i8(a.qs, 16)) +
                         unit.offset[1] * static_cast<float>(sum_i8(a.qs + 16, 16));
                }
                sums[c] += a.d * s;
            }
        }
    }
    for (int c = 0; c < ncols; ++c) out[c] = sums[c];
}

// Sets the table's entry of every format with units.
template <typename IntDot>
void add_unit_dots(QuantDot& table) {
    for (int t = 0; t < kDTypeCount; ++t) {
        with_block_type(
            static_cast<DType>(t),
            [&]<typename Block>(BlockTag<Block>) {
                if constexpr (UnitBlock<Block>) table.dot[t] = dot_units<Block, IntDot>;
                return true;
            },
            false);
    }
}

}  // namespace xb::cpu_kernels
