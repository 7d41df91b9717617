// Plain loops over packed f32 spans that the host kernels spend their time in (binary ops,
// scale, sums, maxima, norms, soft_max's passes, rope's rotation). They are written once, as
// loops the compiler vectorises (cpu_kernels/row_loops_impl.hpp), and compiled once per instruction set
// (row_loops_<isa>.cpp), so that a portable binary runs them with AVX2 on a CPU that has it;
// row_loops() is the table of active_isa(). Every set does the same operations in the same order
// (sums: eight interleaved partial sums in double; the build does not contract a * b + c into an
// FMA), so the sets give the same bits.
#pragma once

#include <cstdint>

#include "core/isa.hpp"

namespace xb::cpu_kernels {

struct RowLoops {
    // y[0, n) = x * scale + bias; y may be x.
    using ScaleFn = void (*)(const float* x, float* y, int64_t n, float scale, float bias);
    // d[0, n) = x op y; d may be x or y.
    using BinaryFn = void (*)(const float* x, const float* y, float* d, int64_t n);
    // A sum over x[0, n) in double.
    using SumFn = double (*)(const float* x, int64_t n);
    // The sum over [0, n) of x * y, each product and the sum in double.
    using DotFn = double (*)(const float* x, const float* y, int64_t n);
    // y[0, n) += x * a.
    using AxpyFn = void (*)(const float* x, float* y, int64_t n, float a);
    // Mamba-2's step of one state row: s[0, n) = s * decay + b * a (in f32, unfused); returns the
    // dot of the new s with c in double.
    using ScanStepFn = double (*)(float* s, const float* b, const float* c, int64_t n, float decay, float a);
    // y[0, n) = x - mean; returns the sum of the y^2 in double. y may be x.
    using CenterFn = double (*)(const float* x, float* y, int64_t n, float mean);
    // The largest of x[0, n) (-inf for n == 0; NaN when any element is NaN).
    using MaxFn = float (*)(const float* x, int64_t n);
    // y[0, n) = x * scale + slope * m; m may be null (then y = x * scale). y may be x.
    using ScaleAddFn = void (*)(const float* x, const float* m, float* y, int64_t n, float scale, float slope);
    // Attention's logits: w[0, n) = w * scale + m where m > -inf, -inf where m is -inf (a masked
    // key stays -inf whatever its score, even NaN from an unwritten cache slot).
    using MaskedLogitsFn = void (*)(float* w, const float* m, int64_t n, float scale);
    // Rotates the first n_dims elements of x into y (which may be x) by the angles in cache
    // (cache[2i] = cos, cache[2i + 1] = sin of pair i): normal mode pairs adjacent elements, neox
    // element i with element i + n_dims / 2.
    using RopeFn = void (*)(const float* x, float* y, const float* cache, int64_t n_dims);

    Isa isa;
    ScaleFn scale;
    BinaryFn binary[4];  // by BinaryOp (core/op_math.hpp): add, sub, mul, div
    SumFn sum;
    SumFn sum_squares;
    CenterFn center;
    MaxFn max;
    ScaleAddFn scale_add;
    MaskedLogitsFn masked_logits;
    RopeFn rope_normal;
    RopeFn rope_neox;
    DotFn dot;
    AxpyFn axpy;
    ScanStepFn scan_step;
};

// The table of `isa` (which this CPU must support), and that of active_isa().
const RowLoops& row_loops(Isa isa);
const RowLoops& row_loops();

// Per instruction set (row_loops_<isa>.cpp).
const RowLoops& row_loops_scalar();
const RowLoops& row_loops_avx2();
const RowLoops& row_loops_avx512();

}  // namespace xb::cpu_kernels
