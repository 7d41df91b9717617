// The row kernels that differ between instruction sets only in their vector width, written once
// over a vector type V: the dot products and axpy of the one-token mul_mat and flash attention,
// and the loops that apply a vector map (plain, or times a gate). row_kernels_<isa>.cpp include
// this with their own V. Everything here is in an anonymous namespace and calls nothing with
// external linkage (see row_loops_impl.hpp): each set's copy stays in its own translation unit.
//
// V provides: T (the vector), kWidth (floats per vector), zero(), load(const float*),
// store(float*, T), set1(float), mul(T, T), sub(T, T), fma(a, b, c) = a * b + c, row<DType>(const
// std::byte*) (kWidth elements of a row as floats), sum4(const T*) (the lanes of four
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

// Four independent sums (one FMA chain would wait out its latency on every step), 4 kWidth
// elements per step; then kWidth at a time into the first; the tail one element at a time after
// the horizontal sum.
template <typename V, DType T>
float dot(const float* q, const std::byte* row, int64_t n) {
    constexpr size_t ts = row_element_bytes<T>();
    constexpr int64_t w = V::kWidth;
    int64_t i = 0;
    typename V::T acc[4] = {V::zero(), V::zero(), V::zero(), V::zero()};
    for (; i + 4 * w <= n; i += 4 * w) {
        for (int k = 0; k < 4; ++k) {
            acc[k] = V::fma(V::load(q + i + w * k), V::template row<T>(row + (i + w * k) * ts), acc[k]);
        }
    }
    for (; i + w <= n; i += w) acc[0] = V::fma(V::load(q + i), V::template row<T>(row + i * ts), acc[0]);
    float sum = V::sum4(acc);
    for (; i < n; ++i) sum += q[i] * load1<T>(row + i * ts);
    return sum;
}

// dot of q with two rows at once, each with exactly dot's operations (so the same bits): every
// load of q serves both rows, and eight FMA chains are in flight. The one-token mul_mat walks a
// matrix two rows at a time, so the next pair is as far past this one as r1 is past r0 doubled:
// its bytes at each step's offset are prefetched (weight_prefetch.hpp says why), a pair ahead.
template <typename V, DType T>
void dot2(const float* q, const std::byte* const* rows, int64_t n, float* out) {
    constexpr size_t ts = row_element_bytes<T>();
    constexpr int64_t w = V::kWidth;
    const std::byte* r0 = rows[0];
    const std::byte* r1 = rows[1];
    const uintptr_t row_stride = reinterpret_cast<uintptr_t>(r1) - reinterpret_cast<uintptr_t>(r0);
    const uintptr_t next0 = reinterpret_cast<uintptr_t>(r1) + row_stride, next1 = next0 + row_stride;
    int64_t i = 0;
    typename V::T a[4] = {V::zero(), V::zero(), V::zero(), V::zero()};
    typename V::T b[4] = {V::zero(), V::zero(), V::zero(), V::zero()};
    for (; i + 4 * w <= n; i += 4 * w) {
        prefetch_lines(next0 + static_cast<size_t>(i) * ts, 4 * w * ts);
        prefetch_lines(next1 + static_cast<size_t>(i) * ts, 4 * w * ts);
        for (int k = 0; k < 4; ++k) {
            const typename V::T qv = V::load(q + i + w * k);
            a[k] = V::fma(qv, V::template row<T>(r0 + (i + w * k) * ts), a[k]);
            b[k] = V::fma(qv, V::template row<T>(r1 + (i + w * k) * ts), b[k]);
        }
    }
    for (; i + w <= n; i += w) {
        const typename V::T qv = V::load(q + i);
        a[0] = V::fma(qv, V::template row<T>(r0 + i * ts), a[0]);
        b[0] = V::fma(qv, V::template row<T>(r1 + i * ts), b[0]);
    }
    float sa = V::sum4(a);
    float sb = V::sum4(b);
    for (; i < n; ++i) {
        sa += q[i] * load1<T>(r0 + i * ts);
        sb += q[i] * load1<T>(r1 + i * ts);
    }
    out[0] = sa;
    out[1] = sb;
}

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
