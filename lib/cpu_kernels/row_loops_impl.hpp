// The loops of cpu_kernels/row_loops.hpp, included by each row_loops_<isa>.cpp and compiled there for
// that instruction set. Everything is in an anonymous namespace and calls nothing with external
// linkage (no std:: templates, no shared inline helpers): a copy compiled for AVX2 must never be
// the one the linker keeps for baseline code.
//
// Reductions keep kLanes partial results, element i going to lane i % kLanes, so that the
// compiler can vectorise them without reassociating (which it may not do for floating point) and
// every set adds in the same order.
#pragma once

#include "cpu_kernels/row_loops.hpp"

namespace xb::cpu_kernels {
namespace {

constexpr int64_t kLanes = 8;

void scale_span(const float* x, float* y, int64_t n, float scale, float bias) {
    for (int64_t i = 0; i < n; ++i) y[i] = x[i] * scale + bias;
}

void add_span(const float* x, const float* y, float* d, int64_t n) {
    for (int64_t i = 0; i < n; ++i) d[i] = x[i] + y[i];
}
void sub_span(const float* x, const float* y, float* d, int64_t n) {
    for (int64_t i = 0; i < n; ++i) d[i] = x[i] - y[i];
}
void mul_span(const float* x, const float* y, float* d, int64_t n) {
    for (int64_t i = 0; i < n; ++i) d[i] = x[i] * y[i];
}
void div_span(const float* x, const float* y, float* d, int64_t n) {
    for (int64_t i = 0; i < n; ++i) d[i] = x[i] / y[i];
}

double add_lanes(const double* acc) {
    return ((acc[0] + acc[1]) + (acc[2] + acc[3])) + ((acc[4] + acc[5]) + (acc[6] + acc[7]));
}

// The sum over i < n of term(i) in double, term i added into lane i % kLanes.
template <typename Term>
double lane_sum(int64_t n, Term term) {
    double acc[kLanes] = {};
    int64_t i = 0;
    for (; i + kLanes <= n; i += kLanes) {
        for (int64_t l = 0; l < kLanes; ++l) acc[l] += term(i + l);
    }
    for (; i < n; ++i) acc[i % kLanes] += term(i);
    return add_lanes(acc);
}

double sum_span(const float* x, int64_t n) {
    return lane_sum(n, [x](int64_t i) { return static_cast<double>(x[i]); });
}

// The squares are rounded to float before the double sum, as ggml's rms_norm does.
double sum_squares_span(const float* x, int64_t n) {
    return lane_sum(n, [x](int64_t i) { return static_cast<double>(x[i] * x[i]); });
}

double dot_span(const float* x, const float* y, int64_t n) {
    return lane_sum(n, [x, y](int64_t i) { return static_cast<double>(x[i]) * static_cast<double>(y[i]); });
}

void axpy_span(const float* x, float* y, int64_t n, float a) {
    for (int64_t i = 0; i < n; ++i) y[i] += x[i] * a;
}

double scan_step_span(float* s, const float* b, const float* c, int64_t n, float decay, float a) {
    return lane_sum(n, [s, b, c, decay, a](int64_t i) {
        const float v = s[i] * decay + b[i] * a;
        s[i] = v;
        return static_cast<double>(v) * static_cast<double>(c[i]);
    });
}

double center_span(const float* x, float* y, int64_t n, float mean) {
    return lane_sum(n, [x, y, mean](int64_t i) {
        const float v = x[i] - mean;
        y[i] = v;
        return static_cast<double>(v * v);
    });
}

// The row's maximum, or NaN where it holds one, as in exact arithmetic (a softmax over it is NaN
// throughout; a float max drops it). Each lane keeps a plain maximum (one vector max) and, apart,
// whether it met a NaN, in the compiler's vector types: the vectoriser leaves a per-lane maximum
// with a NaN test in it scalar, and a softmax calls this for every row of every block.
using LaneFloats = float __attribute__((vector_size(kLanes * sizeof(float))));
using LaneInts = int __attribute__((vector_size(kLanes * sizeof(int))));

float max_span(const float* x, int64_t n) {
    LaneFloats acc;
    LaneInts nan_met{};
    for (int64_t l = 0; l < kLanes; ++l) acc[l] = -__builtin_inff();
    int64_t i = 0;
    for (; i + kLanes <= n; i += kLanes) {
        LaneFloats v;
        __builtin_memcpy(&v, x + i, sizeof v);
        acc = v > acc ? v : acc;
        nan_met |= v != v;
    }
    float m = acc[0];
    int any_nan = nan_met[0];
    for (int64_t l = 1; l < kLanes; ++l) {
        m = acc[l] > m ? acc[l] : m;
        any_nan |= nan_met[l];
    }
    for (; i < n; ++i) {
        m = x[i] > m ? x[i] : m;
        any_nan |= static_cast<int>(x[i] != x[i]);
    }
    return any_nan != 0 ? __builtin_nanf("") : m;
}

void scale_add_span(const float* x, const float* m, float* y, int64_t n, float scale, float slope) {
    if (m == nullptr) return scale_span(x, y, n, scale, 0.0f);
    for (int64_t i = 0; i < n; ++i) y[i] = x[i] * scale + slope * m[i];
}

void masked_logits_span(float* w, const float* m, int64_t n, float scale) {
    for (int64_t i = 0; i < n; ++i) {
        const float scored = w[i] * scale + m[i];
        w[i] = m[i] == -__builtin_inff() ? -__builtin_inff() : scored;
    }
}

// x0 c - x1 s is written as x0 c + (-x1) s (the same rounding): as a subtraction beside an addition
// GCC vectorises the pair into one fused multiply-add-subtract even with contraction off, and the
// sets would then differ in the last bit.
void rope_normal_span(const float* x, float* y, const float* cache, int64_t n_dims) {
    for (int64_t i0 = 0; i0 < n_dims; i0 += 2) {
        const float c = cache[i0], s = cache[i0 + 1];
        const float x0 = x[i0], x1 = x[i0 + 1];
        y[i0] = x0 * c + (-x1) * s;
        y[i0 + 1] = x0 * s + x1 * c;
    }
}

void rope_neox_span(const float* x, float* y, const float* cache, int64_t n_dims) {
    const int64_t half = n_dims / 2;
    for (int64_t i = 0; i < half; ++i) {
        const float c = cache[2 * i], s = cache[2 * i + 1];
        const float x0 = x[i], x1 = x[i + half];
        y[i] = x0 * c - x1 * s;
        y[i + half] = x0 * s + x1 * c;
    }
}

constexpr RowLoops make_row_loops(Isa isa) {
    return RowLoops{isa,
                    &scale_span,
                    {&add_span, &sub_span, &mul_span, &div_span},
                    &sum_span,
                    &sum_squares_span,
                    &center_span,
                    &max_span,
                    &scale_add_span,
                    &masked_logits_span,
                    &rope_normal_span,
                    &rope_neox_span,
                    &dot_span,
                    &axpy_span,
                    &scan_step_span};
}

}  // namespace
}  // namespace xb::cpu_kernels
