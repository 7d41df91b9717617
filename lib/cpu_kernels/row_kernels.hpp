// Kernels over one packed row, per instruction set, for the host ops that spend their time in
// them: flash attention's dot products of the query with K rows and its axpy of V rows into the
// accumulator (f32, f16 or bf16 rows), the unary maps whose cost is a transcendental (exp,
// tanh, sigmoid, silu, gelu, gelu_quick), which the unary, glu and soft_max kernels use, soft_max's
// exponentials with their sum, rope's cos/sin, and the
// transposition of 32-bit matrices behind cont/cpy of transposed tensors. One table per instruction set, each in its own translation
// unit compiled for that set only (row_kernels_<isa>.cpp); row_kernels() is the one of active_isa().
#pragma once

#include <cstddef>
#include <cstdint>
#include <optional>

#include "core/dtype.hpp"
#include "core/op.hpp"
#include "core/isa.hpp"

namespace xb::cpu_kernels {

// The row element types the table covers, as its index.
enum class RowType { F32, F16, BF16 };
constexpr int kRowTypeCount = 3;
std::optional<RowType> row_type(DType t);

// The row counts of RowKernels::dot_rows, by slot.
constexpr int kDotRowsKinds = 3;
constexpr int dot_rows_count(int slot) { return 2 << slot; }

struct RowKernels {
    // dot(q[0, n), row of n packed elements)
    using DotFn = float (*)(const float* q, const std::byte* row, int64_t n);
    // out[r] = dot(q, first + r * stride, n) for r < R, with the same bits as R calls of DotFn:
    // one pass over q for R weight rows (the one-token mul_mat).
    using DotRowsFn = void (*)(const float* q, const std::byte* first, size_t stride, int64_t n, float* out);
    // acc[0, n) += s * row of n packed elements
    using AxpyFn = void (*)(float* acc, float s, const std::byte* row, int64_t n);
    // y[0, n) = op(x[0, n)); y may be x.
    using MapFn = void (*)(const float* x, float* y, int64_t n);
    // y[0, n) = act(x[0, n)) * g[0, n) in one pass (swiglu, geglu); y may be x or g.
    using GatedMapFn = void (*)(const float* x, const float* g, float* y, int64_t n);
    // dst[r * dst_stride + c] = src[c * src_stride + r] for r < rows, c < cols (32-bit elements,
    // strides in elements; src and dst do not overlap).
    // v[0, n) = exp(v - max) in place; returns the sum of the results in double.
    using ExpSumFn = double (*)(float* v, int64_t n, float max);
    // cos_sin[2i] = cos(x[i]), cos_sin[2i + 1] = sin(x[i]) for i < n: rope's cache of rotations.
    using SinCosFn = void (*)(const float* x, float* cos_sin, int64_t n);
    using Transpose32Fn = void (*)(const uint32_t* src, int64_t src_stride, uint32_t* dst, int64_t dst_stride,
                                   int64_t rows, int64_t cols);

    Isa isa;
    DotFn dot[kRowTypeCount];
    DotRowsFn dot_rows[kRowTypeCount][kDotRowsKinds];  // R = dot_rows_count(slot): 2, 4, 8
    AxpyFn axpy[kRowTypeCount];
    // By UnaryOp; nullptr where the set has no vector form (the kernels then map element by
    // element with the scalar functions of core/op_math.hpp, as the scalar set does throughout).
    MapFn unary[kUnaryOpCount];
    // By GluOp; nullptr where the set has none (the glu kernel then maps and multiplies).
    GatedMapFn gated[kGluOpCount];
    Transpose32Fn transpose32;
    ExpSumFn exp_sum;  // soft_max's exponentials and their sum
    SinCosFn sincos;
};

// The table of `isa` (which this CPU must support), and that of active_isa().
const RowKernels& row_kernels(Isa isa);
const RowKernels& row_kernels();

// Per instruction set (row_kernels_<isa>.cpp).
const RowKernels& row_kernels_scalar();
const RowKernels& row_kernels_avx2();
const RowKernels& row_kernels_avx512();

}  // namespace xb::cpu_kernels
