// Scalar math of the ops, shared by the CPU kernels and CUDA kernels (XB_HD), so that one
// definition is tested on the CPU.
#pragma once

#include <cmath>

#include "core/host_device.hpp"
#include "core/op.hpp"

namespace xb {

// tanh approximation of GELU, as ggml computes it.
XB_HD float gelu_f32(float x) {
    constexpr float kSqrt2OverPi = 0.79788456080286535587989211986876f;
    constexpr float kCoef = 0.044715f;
    return 0.5f * x * (1.0f + tanhf(kSqrt2OverPi * x * (1.0f + kCoef * x * x)));
}
XB_HD float gelu_quick_f32(float x) { return x * (1.0f / (1.0f + expf(-1.702f * x))); }
XB_HD float silu_f32(float x) { return x / (1.0f + expf(-x)); }
XB_HD float sigmoid_f32(float x) { return 1.0f / (1.0f + expf(-x)); }
// log(1 + exp(x)); x itself above 20, where exp(-x) < 2.1e-9 is below half an ulp of x (ggml's
// cut). log1pf keeps the small values of large negative x that log(1 + exp(x)) rounds to 0.
XB_HD float softplus_f32(float x) { return x > 20.0f ? x : log1pf(expf(x)); }

// The GPU's forms of the sigmoid family: exp through the hardware's exp2 (__expf: at most
// 2 + floor(1.173 |x|) ulp, CUDA C++ Programming Guide, intrinsic functions) and a hardware
// reciprocal (__frcp_rn, correctly rounded) instead of a division. GELU's tanh becomes a sigmoid,
// 0.5 (1 + tanh(y)) = 1 / (1 + exp(-2y)), exact in real arithmetic and free of tanh's cost. On the
// host the same forms run with expf and a division, so that the rewriting itself is tested against
// float64 here (test_op_math.cpp); the intrinsics' own error is measured on a GPU
// (CudaDeviceTest.FastActivationsStayWithinTheirUlpBound).
XB_HD float fast_exp_f32(float x) {
#if defined(__CUDA_ARCH__)
    return __expf(x);
#else
    return expf(x);
#endif
}
XB_HD float fast_recip_f32(float x) {
#if defined(__CUDA_ARCH__)
    return __frcp_rn(x);
#else
    return 1.0f / x;
#endif
}
XB_HD float fast_sigmoid_f32(float x) { return fast_recip_f32(1.0f + fast_exp_f32(-x)); }
XB_HD float fast_silu_f32(float x) { return x * fast_sigmoid_f32(x); }
XB_HD float fast_gelu_quick_f32(float x) { return x * fast_sigmoid_f32(1.702f * x); }
XB_HD float fast_gelu_f32(float x) {
    constexpr float kTwoSqrt2OverPi = 1.5957691216057307117597842397375f;
    constexpr float kCoef = 0.044715f;
    return x * fast_sigmoid_f32(kTwoSqrt2OverPi * x * (1.0f + kCoef * x * x));
}
XB_HD float fast_glu_activation_f32(GluOp op, float x) {
    return op == GluOp::SwiGlu ? fast_silu_f32(x) : fast_gelu_f32(x);
}

// std::min(x, hi) and std::clamp(x, lo, hi): their comparisons keep a NaN x, where fminf/fmaxf
// would put the bound in its place (and a NaN activation would vanish from the layer).
XB_HD float min_keeping_nan(float x, float hi) { return hi < x ? hi : x; }
XB_HD float clamp_keeping_nan(float x, float lo, float hi) { return x < lo ? lo : (hi < x ? hi : x); }

// gpt-oss's clamped SwiGLU (GluOp::SwiGluOai) of one element: x = min(x, limit) and
// g = clamp(g, -limit, limit), then x * sigmoid(alpha x) * (g + 1), with std::min and std::clamp
// as ggml's CPU has them (a NaN input stays NaN). The fast form takes the GPU's sigmoid.
XB_HD float swiglu_oai_f32(float x, float g, float alpha, float limit) {
    x = min_keeping_nan(x, limit);
    g = clamp_keeping_nan(g, -limit, limit);
    return x * sigmoid_f32(alpha * x) * (g + 1.0f);
}
XB_HD float fast_swiglu_oai_f32(float x, float g, float alpha, float limit) {
    x = min_keeping_nan(x, limit);
    g = clamp_keeping_nan(g, -limit, limit);
    return x * fast_sigmoid_f32(alpha * x) * (g + 1.0f);
}
// act(x) * g for any GluOp in the GPU's fast forms; alpha and limit are SwiGluOai's.
XB_HD float fast_glu_f32(GluOp op, float x, float g, float alpha, float limit) {
    return op == GluOp::SwiGluOai ? fast_swiglu_oai_f32(x, g, alpha, limit) : fast_glu_activation_f32(op, x) * g;
}

// What norm, rms_norm and l2_norm multiply their (for norm: centred) values by, from the sum of
// their squares over the row's n values: 1/sqrt(var + eps), 1/sqrt(mean square + eps), and
// 1/max(|x|, eps) (ggml's l2_norm; a NaN norm is kept, and spreads).
XB_HD float norm_scale_f32(Op op, double sum_sq, int64_t n, float eps) {
    if (op == Op::L2Norm) {
        const float length = sqrtf(static_cast<float>(sum_sq));
        return 1.0f / (length < eps ? eps : length);
    }
    return 1.0f / sqrtf(static_cast<float>(sum_sq / static_cast<double>(n)) + eps);
}

XB_HD float unary_f32(UnaryOp op, float x) {
    switch (op) {
        case UnaryOp::Neg: return -x;
        case UnaryOp::Relu: return x < 0.0f ? 0.0f : x;  // NaN stays NaN (ggml's relu makes it 0)
        case UnaryOp::Gelu: return gelu_f32(x);
        case UnaryOp::GeluQuick: return gelu_quick_f32(x);
        case UnaryOp::Silu: return silu_f32(x);
        case UnaryOp::Tanh: return tanhf(x);
        case UnaryOp::Sigmoid: return sigmoid_f32(x);
        case UnaryOp::Exp: return expf(x);
        case UnaryOp::Softplus: return softplus_f32(x);
    }
    return x;
}

// unary_f32 with the sigmoid family in its fast forms (the GPU's element-wise kernels).
XB_HD float fast_unary_f32(UnaryOp op, float x) {
    switch (op) {
        case UnaryOp::Gelu: return fast_gelu_f32(x);
        case UnaryOp::GeluQuick: return fast_gelu_quick_f32(x);
        case UnaryOp::Silu: return fast_silu_f32(x);
        case UnaryOp::Sigmoid: return fast_sigmoid_f32(x);
        default: return unary_f32(op, x);
    }
}

// The activation applied to the gated half of a GLU.
XB_HD float glu_activation_f32(GluOp op, float x) {
    return op == GluOp::SwiGlu ? silu_f32(x) : gelu_f32(x);
}

// scale: x * s + b.
XB_HD float scale_f32(float x, float s, float b) { return x * s + b; }
// clamp: min(max(x, lo), hi) as std::min and std::max compute it, so that a NaN x stays NaN.
XB_HD float clamp_f32(float x, float lo, float hi) {
    const float at_least_lo = x < lo ? lo : x;
    return hi < at_least_lo ? hi : at_least_lo;
}

enum class BinaryOp { Add, Sub, Mul, Div };
XB_HD float binary_f32(BinaryOp op, float a, float b) {
    switch (op) {
        case BinaryOp::Add: return a + b;
        case BinaryOp::Sub: return a - b;
        case BinaryOp::Mul: return a * b;
        case BinaryOp::Div: return a / b;
    }
    return a;
}

// --- argsort ------------------------------------------------------------------------------------

// Whether element (a, index ia) of a row comes before (b, ib) in argsort's order: by value
// (ascending or descending), equal values by index, NaN after every number in either order. A
// strict total order over the row's (value, index) pairs: every correct sort, stable or not,
// gives the one result a stable sort by value gives.
XB_HD bool argsort_before(SortOrder order, float a, int64_t ia, float b, int64_t ib) {
    const bool a_nan = a != a;
    const bool b_nan = b != b;
    if (a_nan || b_nan) return a_nan == b_nan ? ia < ib : b_nan;
    if (a != b) return order == SortOrder::Descending ? a > b : a < b;
    return ia < ib;
}

// --- attention sinks ----------------------------------------------------------------------------

// A finished online softmax of one row (max m, sum l of exp(score - m), and an accumulator of
// exp(score - m)-weighted values) joined by a sink: one more logit with no value (gpt-oss). The
// result is acc * scale / sum. A sink of -inf changes nothing; a row whose keys were all masked
// (m = -inf, l = 0) gets scale 0 and sum 1: zeros.
struct SinkFold {
    float scale;  // for what is accumulated (exp(m - new max))
    float sum;    // the new sum
};
XB_HD SinkFold fold_sink(float m, float l, float sink) {
    if (sink == -INFINITY) return {1.0f, l};
    if (sink > m) {
        const float ms = expf(m - sink);
        return {ms, l * ms + 1.0f};
    }
    return {1.0f, l + expf(sink - m)};
}

// ALiBi slope of head h of n_head heads; 1 when max_bias == 0.
XB_HD float alibi_slope_f32(int h, int n_head, float max_bias) {
    if (max_bias <= 0.0f) return 1.0f;
    int n_head_log2 = 1;
    while (n_head_log2 * 2 <= n_head) n_head_log2 *= 2;
    const float m0 = powf(2.0f, -max_bias / static_cast<float>(n_head_log2));
    const float m1 = powf(2.0f, -(max_bias / 2.0f) / static_cast<float>(n_head_log2));
    return h < n_head_log2 ? powf(m0, static_cast<float>(h + 1))
                           : powf(m1, static_cast<float>(2 * (h - n_head_log2) + 1));
}

// --- rope (with YaRN ramps, as ggml) ------------------------------------------------------------

// The dim at which a rotation of n_rot turns per original context n_ctx_orig happens.
XB_HD float rope_yarn_corr_dim(int n_dims, int n_ctx_orig, float n_rot, float base) {
    return static_cast<float>(n_dims) * logf(static_cast<float>(n_ctx_orig) / (n_rot * 2.0f * 3.14159265358979323846f)) /
           (2.0f * logf(base));
}

struct RopeCorrDims {
    float lo;
    float hi;
};
XB_HD RopeCorrDims rope_yarn_corr_dims(int n_dims, int n_ctx_orig, float freq_base, float beta_fast, float beta_slow) {
    const float start = floorf(rope_yarn_corr_dim(n_dims, n_ctx_orig, beta_fast, freq_base));
    const float end = ceilf(rope_yarn_corr_dim(n_dims, n_ctx_orig, beta_slow, freq_base));
    return {start > 0.0f ? start : 0.0f, end < static_cast<float>(n_dims - 1) ? end : static_cast<float>(n_dims - 1)};
}

XB_HD float rope_yarn_ramp(float lo, float hi, int i0) {
    const float y = (static_cast<float>(i0 / 2) - lo) / fmaxf(0.001f, hi - lo);
    return 1.0f - fminf(1.0f, fmaxf(0.0f, y));
}

struct RopeCosSin {
    float cos;
    float sin;
};
// The angle and magnitude of the rotation of pair i0 (even) at extrapolated angle theta_extrap.
struct RopeAngle {
    float theta;
    float mscale;
};
XB_HD RopeAngle rope_yarn_angle(float theta_extrap, float freq_scale, RopeCorrDims corr, int i0, float ext_factor,
                                float mscale) {
    const float theta_interp = freq_scale * theta_extrap;
    float theta = theta_interp;
    if (ext_factor != 0.0f) {
        const float ramp_mix = rope_yarn_ramp(corr.lo, corr.hi, i0) * ext_factor;
        theta = theta_interp * (1.0f - ramp_mix) + theta_extrap * ramp_mix;
        mscale *= 1.0f + 0.1f * logf(1.0f / freq_scale);
    }
    return {theta, mscale};
}
// cos/sin of the rotation of pair i0 (even) at extrapolated angle theta_extrap.
XB_HD RopeCosSin rope_yarn(float theta_extrap, float freq_scale, RopeCorrDims corr, int i0, float ext_factor,
                           float mscale) {
    const RopeAngle a = rope_yarn_angle(theta_extrap, freq_scale, corr, i0, ext_factor, mscale);
    // One sincosf (glibc and CUDA both have it) costs about one sinf.
    float sin_theta = 0.0f, cos_theta = 0.0f;
    sincosf(a.theta, &sin_theta, &cos_theta);
    return {cos_theta * a.mscale, sin_theta * a.mscale};
}

}  // namespace xb
