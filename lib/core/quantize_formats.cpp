#include "core/quantize_formats.hpp"

#include <algorithm>
#include <cmath>
#include <cstring>

#include "core/quant_fit.hpp"

namespace xb {

namespace {

float largest(const float* v, int n) { return *std::max_element(v, v + n); }

}  // namespace

// --- q2_K: sixteen affine sub-blocks of 16, 4-bit scales and minima -----------------------------------

void quantize_block(const float* x, BlockQ2_K& b) {
    constexpr int kSub = 16;
    float scale[kSub], offset[kSub];
    for (int k = 0; k < kSub; ++k) fit_affine(x + 16 * k, 16, 3, scale[k], offset[k]);
    b.d = f32_to_f16(largest(scale, kSub) / 15);
    b.dmin = f32_to_f16(largest(offset, kSub) / 15);
    const float d = f16_to_f32(b.d);
    const float dmin = f16_to_f32(b.dmin);
    std::memset(b.qs, 0, sizeof b.qs);
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

void quantize_block(const float* x, BlockQ3_K& b) {
    constexpr int kSub = 16;
    float scale[kSub];
    for (int k = 0; k < kSub; ++k) scale[k] = fit_symmetric(x + 16 * k, 16, -4, 3, 0.1f);
    // The scale of largest magnitude maps to -32, as the values within a sub-block do to -4.
    b.d = f32_to_f16(signed_absmax(scale, kSub) / -32);
    const float d = f16_to_f32(b.d);
    std::memset(b.hmask, 0, sizeof b.hmask);
    std::memset(b.qs, 0, sizeof b.qs);
    std::memset(b.scales, 0, sizeof b.scales);
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

namespace {

// The index of the table value nearest v (the lower one on ties).
int nearest_iq4(float v) {
    int best = 0;
    float best_err = std::fabs(v - static_cast<float>(iq4_value(0)));
    for (int q = 1; q < 16; ++q) {
        const float err = std::fabs(v - static_cast<float>(iq4_value(q)));
        if (err < best_err) {
            best_err = err;
            best = q;
        }
    }
    return best;
}

// x ~ scale * table[q]: the value of largest magnitude near -127 (the table's end), refined by least
// squares over candidate scales around it. Returns the scale (0 for an all-zero x).
float fit_iq4(const float* x, int n) {
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

void pack_iq4(const float* x, float scale, uint8_t* qs) {
    const float inv = inverse_or_zero(scale);
    for (int j = 0; j < 16; ++j) {
        const int lo = nearest_iq4(x[j] * inv);
        const int hi = nearest_iq4(x[j + 16] * inv);
        qs[j] = static_cast<uint8_t>(lo | (hi << 4));
    }
}

}  // namespace

void quantize_block(const float* x, BlockIQ4_NL& b) {
    b.d = f32_to_f16(fit_iq4(x, kQK));
    pack_iq4(x, f16_to_f32(b.d), b.qs);
}

void quantize_block(const float* x, BlockIQ4_XS& b) {
    constexpr int kSub = kQKK / 32;
    float scale[kSub];
    for (int k = 0; k < kSub; ++k) scale[k] = fit_iq4(x + 32 * k, 32);
    b.d = f32_to_f16(signed_absmax(scale, kSub) / -32);
    const float d = f16_to_f32(b.d);
    b.scales_h = 0;
    std::memset(b.scales_l, 0, sizeof b.scales_l);
    for (int k = 0; k < kSub; ++k) {
        const int l = d != 0.0f ? clamp_round(scale[k] / d, -32, 31) : 0;
        const int s6 = l + 32;
        b.scales_l[k / 2] |= static_cast<uint8_t>((s6 & 0x0F) << (4 * (k % 2)));
        b.scales_h = static_cast<uint16_t>(b.scales_h | ((s6 >> 4) << (2 * k)));
        pack_iq4(x + 32 * k, d * static_cast<float>(l), b.qs + 16 * k);
    }
}

// --- ternary: ggml's reference rounding -------------------------------------------------------------------

namespace {

// t + 1 in {0, 1, 2} for each value: x / max|x| rounded half away from zero.
void ternary_digits(const float* x, uint16_t& d_bits, uint8_t (&t)[kQKK]) {
    float amax = 0.0f;
    for (int j = 0; j < kQKK; ++j) amax = std::max(amax, std::fabs(x[j]));
    const float id = inverse_or_zero(amax);
    for (int j = 0; j < kQKK; ++j) t[j] = static_cast<uint8_t>(static_cast<int>(std::round(x[j] * id)) + 1);
    d_bits = f32_to_f16(amax);
}

// Digits with weights 81, 27, 9, 3, 1 (or the first `count`), as a fixed-point fraction of 243.
uint8_t pack_base3(const uint8_t* t, int stride, int count) {
    constexpr int kWeight[5] = {81, 27, 9, 3, 1};
    int v = 0;
    for (int i = 0; i < count; ++i) v += t[i * stride] * kWeight[i];
    return static_cast<uint8_t>((v * 256 + 242) / 243);
}

}  // namespace

void quantize_block(const float* x, BlockTQ1_0& b) {
    uint8_t t[kQKK];
    ternary_digits(x, b.d, t);
    for (int l = 0; l < 32; ++l) b.qs[l] = pack_base3(t + l, 32, 5);
    for (int l = 0; l < 16; ++l) b.qs[32 + l] = pack_base3(t + 160 + l, 16, 5);
    for (int l = 0; l < 4; ++l) b.qh[l] = pack_base3(t + 240 + l, 4, 4);
}

void quantize_block(const float* x, BlockTQ2_0& b) {
    uint8_t t[kQKK];
    ternary_digits(x, b.d, t);
    std::memset(b.qs, 0, sizeof b.qs);
    for (int e = 0; e < kQKK; ++e) set_k_low_2bits(b.qs, e, t[e]);
}

// --- mxfp4: ggml's reference rounding ----------------------------------------------------------------------

void quantize_block(const float* x, BlockMXFP4& b) {
    float amax = 0.0f;
    for (int j = 0; j < kQK; ++j) amax = std::max(amax, std::fabs(x[j]));
    // The shared exponent puts the largest value among the table's top entries (up to 6 = 2^2.6).
    const int e = amax > 0.0f ? static_cast<int>(std::floor(std::log2(amax))) - 2 + 127 : 0;
    b.e = static_cast<uint8_t>(e);
    const float d = e8m0_half(b.e);
    int q[kQK];
    for (int j = 0; j < kQK; ++j) {
        // The nearest table value, the first on ties (so 0 is +0).
        q[j] = 0;
        float best = std::fabs(d * static_cast<float>(fp4_value(0)) - x[j]);
        for (int k = 1; k < 16; ++k) {
            const float err = std::fabs(d * static_cast<float>(fp4_value(k)) - x[j]);
            if (err < best) {
                best = err;
                q[j] = k;
            }
        }
    }
    for (int j = 0; j < kQK / 2; ++j) b.qs[j] = static_cast<uint8_t>(q[j] | (q[j + kQK / 2] << 4));
}

}  // namespace xb
