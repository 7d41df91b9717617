// The row kernels that differ between instruction sets only in their vector width, written once
// over a vector type V: the dot products and axpy of the one-token mul_mat and flash attention,
// and the loops that apply a vector map (plain, or times a gate). row_kernels_<isa>.cpp include
// this with their own V. Everything here is in an anonymous namespace and calls nothing with
// external linkage (see row_loops_impl.hpp): each set's copy stays in its own translation unit.
//
// V provides: T (the vector), kWidth (floats per vector), zero(), load(const float*),
// store(float*, T), set1(float), mul(T, T), sub(T, T), fma(a, b, c) = a * b + c, row<DType>(const
// std::byte*) (kWidth elements of a row as floats), kMaxDotRows, sum2(const T*) (the lanes of two
// accumulators added in one fixed order), exp5(T) (the degree-5 exp of simd_math_avx2.hpp) and
// Sums (double accumulators: add(T), total()).
#pragma once

#include <immintrin.h>

#include <cstring>

#include "cpu_kernels/row_kernels.hpp"
#include "cpu_kernels/weight_prefetch.hpp"

namespace xb::cpu_kernels {
namespace {

template <DType T>
constexpr size_t row_element_bytes() {
    return T == DType::F32 ? 4 : 2;
}

// One element of a row as a float (the tails); f16 through the set's conversion instruction.
template <DType T>
float load1(const std::byte* p) {
    if constexpr (T == DType::F32) {
        float v;
        std::memcpy(&v, p, sizeof v);
        return v;
    } else {
        uint16_t h;
        std::memcpy(&h, p, sizeof h);
        if constexpr (T == DType::F16) return _cvtsh_ss(h);
        const uint32_t bits = static_cast<uint32_t>(h) << 16;
        float v;
        std::memcpy(&v, &bits, sizeof v);
        return v;
    }
}

// The dot products of q with R rows `stride` bytes apart (the one-token mul_mat's walk, R = 1 is
// flash attention's and the walk's single dot). Each row has two sums (independent FMA chains,
// 2 kWidth elements a step), then kWidth at a time into the first, the lanes added by V::sum2 and
// the tail one element at a time: the same operations whatever R, so a row gets the same bits
// whichever walk reads it. Every load of q serves the R rows; with q as long as the L1 cache
// (K = 8192 f32 activations, 32 KiB), one row at a time fetches it again from L2 for every row.
// V::kMaxDotRows: the most rows whose two sums each, with q's two vectors, fit the set's
// registers; more are done in halves. Prefetch: ask for the rows R rows ahead at each step's offset (weight_prefetch.hpp;
// the walk in pairs).
template <typename V, DType T, int R, bool Prefetch>
void dot_rows(const float* q, const std::byte* first, size_t stride, int64_t n, float* out) {
    if constexpr (R > V::kMaxDotRows) {
        dot_rows<V, T, R / 2, Prefetch>(q, first, stride, n, out);
        dot_rows<V, T, R / 2, Prefetch>(q, first + (R / 2) * stride, stride, n, out + R / 2);
    } else {
        constexpr size_t ts = row_element_bytes<T>();
        constexpr int64_t w = V::kWidth;
        typename V::T acc[R][2];
        for (int r = 0; r < R; ++r) acc[r][0] = acc[r][1] = V::zero();
        int64_t i = 0;
        for (; i + 2 * w <= n; i += 2 * w) {
            if constexpr (Prefetch) {
                for (int r = 0; r < R; ++r) {
                    prefetch_lines(reinterpret_cast<uintptr_t>(first) + (R + r) * stride + static_cast<size_t>(i) * ts, 2 * w * ts);
                }
            }
            const typename V::T q0 = V::load(q + i), q1 = V::load(q + i + w);
#pragma GCC unroll 8
            for (int r = 0; r < R; ++r) {
                const std::byte* row = first + r * stride + static_cast<size_t>(i) * ts;
                acc[r][0] = V::fma(q0, V::template row<T>(row), acc[r][0]);
                acc[r][1] = V::fma(q1, V::template row<T>(row + w * ts), acc[r][1]);
            }
        }
        if (i + w <= n) {
            const typename V::T q0 = V::load(q + i);
            for (int r = 0; r < R; ++r) acc[r][0] = V::fma(q0, V::template row<T>(first + r * stride + static_cast<size_t>(i) * ts), acc[r][0]);
            i += w;
        }
        for (int r = 0; r < R; ++r) {
            const std::byte* row = first + r * stride;
            float sum = V::sum2(acc[r]);
            for (int64_t j = i; j < n; ++j) sum += q[j] * load1<T>(row + j * ts);
            out[r] = sum;
        }
    }
}

template <typename V, DType T>
float dot(const float* q, const std::byte* row, int64_t n) {
    float out;
    dot_rows<V, T, 1, false>(q, row, 0, n, &out);
    return out;
}

// The one-token mul_mat's entries of the table: by pairs with the prefetch of the next pair (the
// walk measured on the Intel VMs), by 4 and 8 rows without (on the Zen 4 VM the hardware keeps
// those streams fed; asking as well cost 5-20 %).
template <typename V, DType T>
constexpr RowKernels::DotRowsFn kDotRows[kDotRowsKinds] = {&dot_rows<V, T, 2, true>, &dot_rows<V, T, 4, false>,
                                                           &dot_rows<V, T, 8, false>};

template <typename V, DType T>
void axpy(float* acc, float s, const std::byte* row, int64_t n) {
    constexpr size_t ts = row_element_bytes<T>();
    constexpr int64_t w = V::kWidth;
    int64_t i = 0;
    const typename V::T sv = V::set1(s);
    for (; i + w <= n; i += w) V::store(acc + i, V::fma(V::template row<T>(row + i * ts), sv, V::load(acc + i)));
    for (; i < n; ++i) acc[i] += s * load1<T>(row + i * ts);
}

// y = F(x) a vector at a time; the tail goes through the same vector code from a padded copy, so
// every element gets the same function whatever its position.
template <typename V, typename V::T (*F)(typename V::T)>
void map(const float* x, float* y, int64_t n) {
    constexpr int64_t w = V::kWidth;
    int64_t i = 0;
    for (; i + w <= n; i += w) V::store(y + i, F(V::load(x + i)));
    if (i < n) {
        float tail[w] = {};
        std::memcpy(tail, x + i, static_cast<size_t>(n - i) * sizeof(float));
        V::store(tail, F(V::load(tail)));
        std::memcpy(y + i, tail, static_cast<size_t>(n - i) * sizeof(float));
    }
}

// y = F(x) * g a vector at a time, the tail from padded copies as in map.
template <typename V, typename V::T (*F)(typename V::T)>
void gated_map(const float* x, const float* g, float* y, int64_t n) {
    constexpr int64_t w = V::kWidth;
    int64_t i = 0;
    for (; i + w <= n; i += w) V::store(y + i, V::mul(F(V::load(x + i)), V::load(g + i)));
    if (i < n) {
        float xt[w] = {}, gt[w] = {};
        std::memcpy(xt, x + i, static_cast<size_t>(n - i) * sizeof(float));
        std::memcpy(gt, g + i, static_cast<size_t>(n - i) * sizeof(float));
        V::store(xt, V::mul(F(V::load(xt)), V::load(gt)));
        std::memcpy(y + i, xt, static_cast<size_t>(n - i) * sizeof(float));
    }
}

// v = exp(v - max) a vector at a time, the sum in double; the tail from a copy padded with -inf,
// whose exponentials add 0 (soft_max, and flash attention's blocks of keys).
template <typename V>
double exp_sum(float* v, int64_t n, float max) {
    constexpr int64_t w = V::kWidth;
    const typename V::T m = V::set1(max);
    typename V::Sums sums;
    int64_t i = 0;
    for (; i + w <= n; i += w) {
        const typename V::T e = V::exp5(V::sub(V::load(v + i), m));
        V::store(v + i, e);
        sums.add(e);
    }
    if (i < n) {
        float tail[w];
        for (int64_t k = 0; k < w; ++k) tail[k] = i + k < n ? v[i + k] : -__builtin_inff();
        const typename V::T e = V::exp5(V::sub(V::load(tail), m));
        V::store(tail, e);
        sums.add(e);
        for (int64_t k = 0; i + k < n; ++k) v[i + k] = tail[k];
    }
    return sums.total();
}

}  // namespace
}  // namespace xb::cpu_kernels
