#include "core/quant.hpp"

#include <algorithm>
#include <cmath>
#include <cstring>

#include "core/quant_blocks.hpp"
#include "core/status.hpp"

namespace xb {

namespace {

// --- dequantization --------------------------------------------------------------------------------

template <typename Block, int kElements>
void dequantize_blocks(const void* src, float* dst, int64_t n) {
    const auto* blocks = static_cast<const Block*>(src);
    for (int64_t i = 0; i < n / kElements; ++i) dequantize_block(blocks[i], dst + i * kElements);
}

// --- legacy quantization: ggml's reference rounding ----------------------------------------------------

// The element of largest magnitude, with its sign (the first one on ties).
float signed_absmax(const float* x, int n) {
    float amax = 0.0f, max = 0.0f;
    for (int j = 0; j < n; ++j) {
        if (amax < std::fabs(x[j])) {
            amax = std::fabs(x[j]);
            max = x[j];
        }
    }
    return max;
}

void min_max(const float* x, int n, float& min, float& max) {
    min = x[0];
    max = x[0];
    for (int j = 1; j < n; ++j) {
        min = std::min(min, x[j]);
        max = std::max(max, x[j]);
    }
}

float inverse_or_zero(float d) { return d != 0.0f ? 1.0f / d : 0.0f; }

void quantize_block(const float* x, BlockQ4_0& b) {
    const float d = signed_absmax(x, kQK) / -8;
    const float id = inverse_or_zero(d);
    b.d = f32_to_f16(d);
    for (int j = 0; j < kQK / 2; ++j) {
        const int q0 = std::min(15, static_cast<int>(x[j] * id + 8.5f));
        const int q1 = std::min(15, static_cast<int>(x[j + kQK / 2] * id + 8.5f));
        b.qs[j] = static_cast<uint8_t>(q0 | (q1 << 4));
    }
}

void quantize_block(const float* x, BlockQ4_1& b) {
    float min = 0.0f, max = 0.0f;
    min_max(x, kQK, min, max);
    const float d = (max - min) / 15;
    const float id = inverse_or_zero(d);
    b.d = f32_to_f16(d);
    b.m = f32_to_f16(min);
    for (int j = 0; j < kQK / 2; ++j) {
        const int q0 = std::min(15, static_cast<int>((x[j] - min) * id + 0.5f));
        const int q1 = std::min(15, static_cast<int>((x[j + kQK / 2] - min) * id + 0.5f));
        b.qs[j] = static_cast<uint8_t>(q0 | (q1 << 4));
    }
}

// The 4 low bits of the 32 q's in qs (elements j and j + 16 share a byte), bit 4 in qh.
template <typename Block>
void pack_q5(const int* q, Block& b) {
    uint32_t qh = 0;
    for (int j = 0; j < kQK / 2; ++j) {
        b.qs[j] = static_cast<uint8_t>((q[j] & 0x0F) | ((q[j + kQK / 2] & 0x0F) << 4));
        qh |= static_cast<uint32_t>((q[j] >> 4) & 1) << j;
        qh |= static_cast<uint32_t>((q[j + kQK / 2] >> 4) & 1) << (j + kQK / 2);
    }
    for (int k = 0; k < 4; ++k) b.qh[k] = static_cast<uint8_t>(qh >> (8 * k));
}

void quantize_block(const float* x, BlockQ5_0& b) {
    const float d = signed_absmax(x, kQK) / -16;
    const float id = inverse_or_zero(d);
    b.d = f32_to_f16(d);
    int q[kQK];
    for (int j = 0; j < kQK; ++j) q[j] = std::min(31, static_cast<int>(x[j] * id + 16.5f));
    pack_q5(q, b);
}

void quantize_block(const float* x, BlockQ5_1& b) {
    float min = 0.0f, max = 0.0f;
    min_max(x, kQK, min, max);
    const float d = (max - min) / 31;
    const float id = inverse_or_zero(d);
    b.d = f32_to_f16(d);
    b.m = f32_to_f16(min);
    int q[kQK];
    for (int j = 0; j < kQK; ++j) q[j] = std::min(31, static_cast<int>((x[j] - min) * id + 0.5f));
    pack_q5(q, b);
}

void quantize_block(const float* x, BlockQ8_0& b) {
    float amax = 0.0f;
    for (int j = 0; j < kQK; ++j) amax = std::max(amax, std::fabs(x[j]));
    const float d = amax / 127;
    const float id = inverse_or_zero(d);
    b.d = f32_to_f16(d);
    for (int j = 0; j < kQK; ++j) b.qs[j] = static_cast<int8_t>(std::round(x[j] * id));
}

// --- k-quant quantization: least-squares scales -------------------------------------------------------

int clamp_round(float v, int lo, int hi) {
    return std::clamp(static_cast<int>(std::lround(v)), lo, hi);
}

// x ~ scale * q - offset with q in [0, nmax] and offset >= 0 (the range always reaches down to 0 or
// below, as the format's subtracted minimum requires). Candidate scales around (max - min) / nmax
// each give a rounding of x; for each, the least-squares scale and offset of that rounding; the
// one with the smallest squared error wins.
void fit_affine(const float* x, int n, int nmax, float& scale, float& offset) {
    float min = 0.0f, max = 0.0f;
    min_max(x, n, min, max);
    min = std::min(min, 0.0f);
    scale = 0.0f;
    offset = -min;
    if (max <= min) return;
    double best = INFINITY;
    for (int step = -10; step <= 10; ++step) {
        const float iscale = (static_cast<float>(nmax) + 0.1f * static_cast<float>(step)) / (max - min);
        double sq = 0, sx = 0, sqq = 0, sqx = 0;
        for (int j = 0; j < n; ++j) {
            const double q = clamp_round(iscale * (x[j] - min), 0, nmax);
            sq += q;
            sx += x[j];
            sqq += q * q;
            sqx += q * x[j];
        }
        // x ~ s * q + m by least squares; when every q is the same (a constant run) only the scale
        // is free, and likewise when the best offset would have to be added (m > 0): pin m at 0.
        const double det = n * sqq - sq * sq;
        double s = det > 0 ? (n * sqx - sq * sx) / det : 0;
        double m = det > 0 ? (sqq * sx - sq * sqx) / det : 1;
        if (m > 0) {
            m = 0;
            s = sqq > 0 ? sqx / sqq : 0;
        }
        if (s <= 0) continue;
        double err = 0;
        for (int j = 0; j < n; ++j) {
            const double q = std::clamp(std::round((x[j] - m) / s), 0.0, static_cast<double>(nmax));
            const double e = s * q + m - x[j];
            err += e * e;
        }
        if (err < best) {
            best = err;
            scale = static_cast<float>(s);
            offset = static_cast<float>(-m);
        }
    }
}

// x ~ scale * q with q in [-32, 31]: the largest magnitude maps to -32 (as ggml's symmetric types),
// refined by least squares over candidate scales.
float fit_symmetric6(const float* x, int n) {
    const float max = signed_absmax(x, n);
    if (max == 0.0f) return 0.0f;
    float best_scale = max / -32;
    double best = INFINITY;
    for (int step = -8; step <= 8; ++step) {
        const float iscale = (-32.0f + 0.25f * static_cast<float>(step)) / max;
        double sqq = 0, sqx = 0;
        for (int j = 0; j < n; ++j) {
            const double q = clamp_round(iscale * x[j], -32, 31);
            sqq += q * q;
            sqx += q * x[j];
        }
        if (sqq <= 0) continue;
        const double s = sqx / sqq;
        double err = 0;
        for (int j = 0; j < n; ++j) {
            const double e = s * std::clamp(std::round(x[j] / s), -32.0, 31.0) - x[j];
            err += e * e;
        }
        if (err < best) {
            best = err;
            best_scale = static_cast<float>(s);
        }
    }
    return best_scale;
}

// The 8 sub-block scales and offsets of a q4_K / q5_K block, as 6-bit codes under the f16 super-block
// scales d and dmin, packed as k_scale_min reads them. Returns the effective scale and offset of each
// sub-block as the dequantization will see them.
template <typename Block>
void pack_k_scales(const float* scale, const float* offset, Block& b, float* eff_scale, float* eff_offset) {
    const float max_scale = *std::max_element(scale, scale + 8);
    const float max_offset = *std::max_element(offset, offset + 8);
    b.d = f32_to_f16(max_scale / 63);
    b.dmin = f32_to_f16(max_offset / 63);
    const float d = f16_to_f32(b.d);
    const float dmin = f16_to_f32(b.dmin);
    std::memset(b.scales, 0, sizeof b.scales);
    for (int j = 0; j < 8; ++j) {
        const int sc = d > 0 ? clamp_round(scale[j] / d, 0, 63) : 0;
        const int m = dmin > 0 ? clamp_round(offset[j] / dmin, 0, 63) : 0;
        if (j < 4) {
            b.scales[j] = static_cast<uint8_t>(sc);
            b.scales[j + 4] = static_cast<uint8_t>(m);
        } else {
            b.scales[j + 4] = static_cast<uint8_t>((sc & 0x0F) | ((m & 0x0F) << 4));
            b.scales[j - 4] |= static_cast<uint8_t>((sc >> 4) << 6);
            b.scales[j] |= static_cast<uint8_t>((m >> 4) << 6);
        }
        eff_scale[j] = d * static_cast<float>(sc);
        eff_offset[j] = dmin * static_cast<float>(m);
    }
}

// The q's of one sub-block under its effective scale and offset.
int quantize_affine(float x, float scale, float offset, int nmax) {
    return scale > 0 ? clamp_round((x + offset) / scale, 0, nmax) : 0;
}

void quantize_block(const float* x, BlockQ4_K& b) {
    float scale[8], offset[8], eff_scale[8], eff_offset[8];
    for (int j = 0; j < 8; ++j) fit_affine(x + 32 * j, 32, 15, scale[j], offset[j]);
    pack_k_scales(scale, offset, b, eff_scale, eff_offset);
    for (int pair = 0; pair < 4; ++pair) {
        for (int l = 0; l < 32; ++l) {
            const int lo = quantize_affine(x[64 * pair + l], eff_scale[2 * pair], eff_offset[2 * pair], 15);
            const int hi = quantize_affine(x[64 * pair + 32 + l], eff_scale[2 * pair + 1], eff_offset[2 * pair + 1], 15);
            b.qs[32 * pair + l] = static_cast<uint8_t>(lo | (hi << 4));
        }
    }
}

void quantize_block(const float* x, BlockQ5_K& b) {
    float scale[8], offset[8], eff_scale[8], eff_offset[8];
    for (int j = 0; j < 8; ++j) fit_affine(x + 32 * j, 32, 31, scale[j], offset[j]);
    pack_k_scales(scale, offset, b, eff_scale, eff_offset);
    std::memset(b.qh, 0, sizeof b.qh);
    for (int pair = 0; pair < 4; ++pair) {
        for (int l = 0; l < 32; ++l) {
            const int lo = quantize_affine(x[64 * pair + l], eff_scale[2 * pair], eff_offset[2 * pair], 31);
            const int hi = quantize_affine(x[64 * pair + 32 + l], eff_scale[2 * pair + 1], eff_offset[2 * pair + 1], 31);
            b.qs[32 * pair + l] = static_cast<uint8_t>((lo & 0x0F) | ((hi & 0x0F) << 4));
            b.qh[l] |= static_cast<uint8_t>(((lo >> 4) << (2 * pair)) | ((hi >> 4) << (2 * pair + 1)));
        }
    }
}

void quantize_block(const float* x, BlockQ6_K& b) {
    float scale[16];
    float amax = 0.0f;
    for (int j = 0; j < 16; ++j) {
        scale[j] = fit_symmetric6(x + 16 * j, 16);
        amax = std::max(amax, std::fabs(scale[j]));
    }
    b.d = f32_to_f16(amax / 127);
    const float d = f16_to_f32(b.d);
    std::memset(b.ql, 0, sizeof b.ql);
    std::memset(b.qh, 0, sizeof b.qh);
    for (int j = 0; j < 16; ++j) b.scales[j] = static_cast<int8_t>(d > 0 ? clamp_round(scale[j] / d, -128, 127) : 0);
    for (int e = 0; e < kQKK; ++e) {
        const float s = d * static_cast<float>(b.scales[e / 16]);
        const int q = (s != 0.0f ? clamp_round(x[e] / s, -32, 31) : 0) + 32;
        const int h = e / 128, g = (e % 128) / 32, l = e % 32;
        uint8_t& ql = b.ql[64 * h + 32 * (g % 2) + l];
        ql |= static_cast<uint8_t>(g < 2 ? (q & 0x0F) : ((q & 0x0F) << 4));
        b.qh[32 * h + l] |= static_cast<uint8_t>((q >> 4) << (2 * g));
    }
}

void quantize_block(const float* x, BlockQ8_K& b) {
    float amax = 0.0f;
    for (int j = 0; j < kQKK; ++j) amax = std::max(amax, std::fabs(x[j]));
    const float iscale = amax > 0 ? 127.0f / amax : 0.0f;
    b.d = amax > 0 ? 1.0f / iscale : 0.0f;
    for (int j = 0; j < kQKK; ++j) b.qs[j] = static_cast<int8_t>(clamp_round(x[j] * iscale, -127, 127));
    for (int g = 0; g < kQKK / 16; ++g) {
        int sum = 0;
        for (int l = 0; l < 16; ++l) sum += b.qs[16 * g + l];
        b.bsums[g] = static_cast<int16_t>(sum);
    }
}

template <typename Block, int kElements>
void quantize_blocks(const float* src, void* dst, int64_t n) {
    auto* blocks = static_cast<Block*>(dst);
    for (int64_t i = 0; i < n / kElements; ++i) quantize_block(src + i * kElements, blocks[i]);
}

// Calls f.template operator()<Block, kElements>() for a quantized type; false for the others.
template <typename F>
bool with_block_type(DType type, F&& f) {
    switch (type) {
        case DType::Q4_0: f.template operator()<BlockQ4_0, kQK>(); return true;
        case DType::Q4_1: f.template operator()<BlockQ4_1, kQK>(); return true;
        case DType::Q5_0: f.template operator()<BlockQ5_0, kQK>(); return true;
        case DType::Q5_1: f.template operator()<BlockQ5_1, kQK>(); return true;
        case DType::Q8_0: f.template operator()<BlockQ8_0, kQK>(); return true;
        case DType::Q4_K: f.template operator()<BlockQ4_K, kQKK>(); return true;
        case DType::Q5_K: f.template operator()<BlockQ5_K, kQKK>(); return true;
        case DType::Q6_K: f.template operator()<BlockQ6_K, kQKK>(); return true;
        case DType::Q8_K: f.template operator()<BlockQ8_K, kQKK>(); return true;
        default: return false;
    }
}

}  // namespace

bool can_quantize(DType type) { return is_quantized(type); }

double quantization_nmse_bound(DType type) {
    // Measured on uniform [-1, 1] rows: q4_0 4.3e-3, q4_1 3.8e-3, q5_0 9.7e-4, q5_1 8.6e-4,
    // q8_0 1.5e-5, q4_K 3.1e-3, q5_K 7.5e-4, q6_K 1.5e-4 (q8_K rounds like q8_0).
    switch (type) {
        case DType::Q4_0: return 7e-3;
        case DType::Q4_1: return 6e-3;
        case DType::Q5_0: return 1.5e-3;
        case DType::Q5_1: return 1.3e-3;
        case DType::Q8_0: return 2.5e-5;
        case DType::Q4_K: return 5e-3;
        case DType::Q5_K: return 1.2e-3;
        case DType::Q6_K: return 2.5e-4;
        case DType::Q8_K: return 2.5e-5;
        default: return 0.0;
    }
}

void dequantize_row(DType type, const void* src, float* dst, int64_t n) {
    const bool known = with_block_type(type, [&]<typename Block, int kElements>() {
        dequantize_blocks<Block, kElements>(src, dst, n);
    });
    XB_CHECK_MSG(known, "dequantize_row: not a quantized type");
}

void quantize_row(DType type, const float* src, void* dst, int64_t n) {
    const bool known = with_block_type(type, [&]<typename Block, int kElements>() {
        quantize_blocks<Block, kElements>(src, dst, n);
    });
    XB_CHECK_MSG(known, "quantize_row: not a quantized type");
}

}  // namespace xb
