// Quantizers of the newer block formats that ggml can make without an importance matrix: q2_K,
// q3_K, iq4_nl, iq4_xs, tq1_0, tq2_0 and mxfp4. tq1_0, tq2_0 and mxfp4 are ggml's reference
// roundings, byte for byte those of the gguf package; q2_K, q3_K and the iq4 types use xbackend's
// least-squares searches, whose error is bounded per type (core/quant.hpp's
// quantization_nmse_bound, tests/core/test_quant_formats.cpp). The codebook formats (iq1, iq2, iq3)
// and nvfp4 have none: as in ggml, they are read-only. XB_HD: the CUDA backend's quantizing copies
// run the same code.
#pragma once

#include <cmath>
#include <cstdint>

#include "core/host_device.hpp"
#include "core/quant_fit.hpp"
#include "core/quant_formats.hpp"

namespace xb {

// --- q2_K: sixteen affine sub-blocks of 16, 4-bit scales and minima -----------------------------------

XB_HD void quantize_block(const float* x, BlockQ2_K& b) {
    constexpr int kSub = 16;
    float scale[kSub], offset[kSub];
    for (int k = 0; k < kSub; ++k) fit_affine(x + 16 * k, 16, 3, scale[k], offset[k]);
    b.d = f32_to_f16(largest(scale, kSub) / 15);
    b.dmin = f32_to_f16(largest(offset, kSub) / 15);
    const float d = f16_to_f32(b.d);
    const float dmin = f16_to_f32(b.dmin);
    zero_bytes(b.qs, sizeof b.qs);
    for (int k = 0; k < kSub; ++k) {
        const int sc = d > 0 ? clamp_round(scale[k] / d, 0, 15) : 0;
        const int m = dmin > 0 ? clamp_round(offset[k] / dmin, 0, 15) : 0;
        b.scales[k] = static_cast<uint8_t>(sc | (m << 4));
        const float eff_scale = d * static_cast<float>(sc);
        const float eff_offset = dmin * static_cast<float>(m);
        for (int j = 0; j < 16; ++j) {
            const int e = 16 * k + j;
            const int q = eff_scale > 0 ? clamp_round((x[e] + eff_offset) / eff_scale, 0, 3) : 0;
            set_k_low_2bits(b.qs, e, q);
        }
    }
}

// --- q3_K: sixteen symmetric sub-blocks of 16 (q in -4..3), signed 6-bit scales ---------------------------

XB_HD void quantize_block(const float* x, BlockQ3_K& b) {
    constexpr int kSub = 16;
    float scale[kSub];
    for (int k = 0; k < kSub; ++k) scale[k] = fit_symmetric(x + 16 * k, 16, -4, 3, 0.1f);
    // The scale of largest magnitude maps to -32, as the values within a sub-block do to -4.
    b.d = f32_to_f16(signed_absmax(scale, kSub) / -32);
    const float d = f16_to_f32(b.d);
    zero_bytes(b.hmask, sizeof b.hmask);
    zero_bytes(b.qs, sizeof b.qs);
    zero_bytes(b.scales, sizeof b.scales);
    for (int k = 0; k < kSub; ++k) {
        const int l = d != 0.0f ? clamp_round(scale[k] / d, -32, 31) : 0;
        const int s6 = l + 32;
        b.scales[k % 8] |= static_cast<uint8_t>((s6 & 0x0F) << (k < 8 ? 0 : 4));
        b.scales[8 + k % 4] |= static_cast<uint8_t>((s6 >> 4) << (2 * (k / 4)));
        const float eff = d * static_cast<float>(l);
        for (int j = 0; j < 16; ++j) {
            const int e = 16 * k + j;
            const int u = (eff != 0.0f ? clamp_round(x[e] / eff, -4, 3) : 0) + 4;  // 0..7
            set_k_low_2bits(b.qs, e, u);
            b.hmask[e % 32] |= static_cast<uint8_t>((u >> 2) << (e / 32));
        }
    }
}

// --- iq4: indices into the non-linear table --------------------------------------------------------------

// The index of the table value nearest v (the lower one on ties).
XB_HD int nearest_iq4(float v) {
    int best = 0;
    float best_err = fabsf(v - static_cast<float>(iq4_value(0)));
    for (int q = 1; q < 16; ++q) {
        const float err = fabsf(v - static_cast<float>(iq4_value(q)));
        if (err < best_err) {
            best_err = err;
            best = q;
        }
    }
    return best;
}

// x ~ scale * table[q]: the value of largest magnitude near -127 (the table's end), refined by least
// squares over candidate scales around it. Returns the scale (0 for an all-zero x).
XB_HD float fit_iq4(const float* x, int n) {
    const float max = signed_absmax(x, n);
    if (max == 0.0f) return 0.0f;
    float best_scale = max / -127;
    double best_gain = -1;
    for (int step = -7; step <= 7; ++step) {
        const float iscale = (-127.0f + static_cast<float>(step)) / max;
        double sqx = 0, sqq = 0;
        for (int j = 0; j < n; ++j) {
            const double q = iq4_value(nearest_iq4(iscale * x[j]));
            sqx += q * x[j];
            sqq += q * q;
        }
        // The least-squares scale sqx / sqq removes sqx^2 / sqq of the squared error.
        const double gain = sqq > 0 ? sqx * sqx / sqq : 0;
        if (sqq > 0 && gain > best_gain) {
            best_gain = gain;
            best_scale = static_cast<float>(sqx / sqq);
        }
    }
    return best_scale;
}

XB_HD void pack_iq4(const float* x, float scale, uint8_t* qs) {
    const float inv = inverse_or_zero(scale);
    for (int j = 0; j < 16; ++j) {
        const int lo = nearest_iq4(x[j] * inv);
        const int hi = nearest_iq4(x[j + 16] * inv);
        qs[j] = static_cast<uint8_t>(lo | (hi << 4));
    }
}

XB_HD void quantize_block(const float* x, BlockIQ4_NL& b) {
    b.d = f32_to_f16(fit_iq4(x, kQK));
    pack_iq4(x, f16_to_f32(b.d), b.qs);
}

XB_HD void quantize_block(const float* x, BlockIQ4_XS& b) {
    constexpr int kSub = kQKK / 32;
    float scale[kSub];
    for (int k = 0; k < kSub; ++k) scale[k] = fit_iq4(x + 32 * k, 32);
    b.d = f32_to_f16(signed_absmax(scale, kSub) / -32);
    const float d = f16_to_f32(b.d);
    b.scales_h = 0;
    zero_bytes(b.scales_l, sizeof b.scales_l);
    for (int k = 0; k < kSub; ++k) {
        const int l = d != 0.0f ? clamp_round(scale[k] / d, -32, 31) : 0;
        const int s6 = l + 32;
        b.scales_l[k / 2] |= static_cast<uint8_t>((s6 & 0x0F) << (4 * (k % 2)));
        b.scales_h = static_cast<uint16_t>(b.scales_h | ((s6 >> 4) << (2 * k)));
        pack_iq4(x + 32 * k, d * static_cast<float>(l), b.qs + 16 * k);
    }
}

// --- ternary: ggml's reference rounding -------------------------------------------------------------------

// t + 1 in {0, 1, 2} for each value: x / max|x| rounded half away from zero.
XB_HD void ternary_digits(const float* x, uint16_t& d_bits, uint8_t (&t)[kQKK]) {
    float amax = 0.0f;
    for (int j = 0; j < kQKK; ++j) amax = max_value(amax, fabsf(x[j]));
    const float id = inverse_or_zero(amax);
    for (int j = 0; j < kQKK; ++j) t[j] = static_cast<uint8_t>(static_cast<int>(roundf(x[j] * id)) + 1);
    d_bits = f32_to_f16(amax);
}

// Digits with weights 81, 27, 9, 3, 1 (or the first `count`), as a fixed-point fraction of 243.
XB_HD uint8_t pack_base3(const uint8_t* t, int stride, int count) {
    constexpr int kWeight[5] = {81, 27, 9, 3, 1};
    int v = 0;
    for (int i = 0; i < count; ++i) v += t[i * stride] * kWeight[i];
    return static_cast<uint8_t>((v * 256 + 242) / 243);
}

XB_HD void quantize_block(const float* x, BlockTQ1_0& b) {
    uint8_t t[kQKK];
    ternary_digits(x, b.d, t);
    for (int l = 0; l < 32; ++l) b.qs[l] = pack_base3(t + l, 32, 5);
    for (int l = 0; l < 16; ++l) b.qs[32 + l] = pack_base3(t + 160 + l, 16, 5);
    for (int l = 0; l < 4; ++l) b.qh[l] = pack_base3(t + 240 + l, 4, 4);
}

XB_HD void quantize_block(const float* x, BlockTQ2_0& b) {
    uint8_t t[kQKK];
    ternary_digits(x, b.d, t);
    zero_bytes(b.qs, sizeof b.qs);
    for (int e = 0; e < kQKK; ++e) set_k_low_2bits(b.qs, e, t[e]);
}

// --- mxfp4: ggml's reference rounding ----------------------------------------------------------------------

XB_HD void quantize_block(const float* x, BlockMXFP4& b) {
    float amax = 0.0f;
    for (int j = 0; j < kQK; ++j) amax = max_value(amax, fabsf(x[j]));
    // The shared exponent puts the largest value among the table's top entries (up to 6 = 2^2.6).
    const int e = amax > 0.0f ? static_cast<int>(floorf(log2f(amax))) - 2 + 127 : 0;
    b.e = static_cast<uint8_t>(e);
    const float d = e8m0_half(b.e);
    int q[kQK];
    for (int j = 0; j < kQK; ++j) {
        // The nearest table value, the first on ties (so 0 is +0).
        q[j] = 0;
        float best = fabsf(d * static_cast<float>(fp4_value(0)) - x[j]);
        for (int k = 1; k < 16; ++k) {
            const float err = fabsf(d * static_cast<float>(fp4_value(k)) - x[j]);
            if (err < best) {
                best = err;
                q[j] = k;
            }
        }
    }
    for (int j = 0; j < kQK / 2; ++j) b.qs[j] = static_cast<uint8_t>(q[j] | (q[j + kQK / 2] << 4));
}

}  // namespace xb
