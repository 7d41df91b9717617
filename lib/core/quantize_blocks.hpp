// Quantizers of the legacy and k-quant block formats: ggml's reference rounding for q4_0, q4_1,
// q5_0, q5_1, q8_0 and q8_K, xbackend's least-squares scales for q4_K, q5_K and q6_K
// (core/quant_fit.hpp). XB_HD: the CPU (core/quant.cpp's quantize_row) and the CUDA backend's
// quantizing copies run the same code. They round alike, but for
// the multiply-adds the device fuses and the host may keep apart: a value on a rounding boundary
// can land one step away.
#pragma once

#include <cmath>
#include <cstdint>

#include "core/dtype.hpp"
#include "core/host_device.hpp"
#include "core/quant_block_types.hpp"
#include "core/quant_fit.hpp"

namespace xb {

// --- legacy quantization: ggml's reference rounding ----------------------------------------------------

XB_HD void quantize_block(const float* x, BlockQ4_0& b) {
    const float d = signed_absmax(x, kQK) / -8;
    const float id = inverse_or_zero(d);
    b.d = f32_to_f16(d);
    for (int j = 0; j < kQK / 2; ++j) {
        const int q0 = min_value(15, static_cast<int>(x[j] * id + 8.5f));
        const int q1 = min_value(15, static_cast<int>(x[j + kQK / 2] * id + 8.5f));
        b.qs[j] = static_cast<uint8_t>(q0 | (q1 << 4));
    }
}

// The header of a q4_1 / q5_1 block: d = (max - min) / nmax and the minimum. Returns 1 / d (0 for a
// constant block) and, in min, the minimum.
template <typename Block>
XB_HD float set_affine_header(const float* x, float nmax, Block& b, float& min) {
    float max = 0.0f;
    min_max(x, kQK, min, max);
    const float d = (max - min) / nmax;
    b.d = f32_to_f16(d);
    b.m = f32_to_f16(min);
    return inverse_or_zero(d);
}

XB_HD void quantize_block(const float* x, BlockQ4_1& b) {
    float min = 0.0f;
    const float id = set_affine_header(x, 15, b, min);
    for (int j = 0; j < kQK / 2; ++j) {
        const int q0 = min_value(15, static_cast<int>((x[j] - min) * id + 0.5f));
        const int q1 = min_value(15, static_cast<int>((x[j + kQK / 2] - min) * id + 0.5f));
        b.qs[j] = static_cast<uint8_t>(q0 | (q1 << 4));
    }
}

// The 4 low bits of the 32 q's in qs (elements j and j + 16 share a byte), bit 4 in qh.
template <typename Block>
XB_HD void pack_q5(const int* q, Block& b) {
    uint32_t qh = 0;
    for (int j = 0; j < kQK / 2; ++j) {
        b.qs[j] = static_cast<uint8_t>((q[j] & 0x0F) | ((q[j + kQK / 2] & 0x0F) << 4));
        qh |= static_cast<uint32_t>((q[j] >> 4) & 1) << j;
        qh |= static_cast<uint32_t>((q[j + kQK / 2] >> 4) & 1) << (j + kQK / 2);
    }
    for (int k = 0; k < 4; ++k) b.qh[k] = static_cast<uint8_t>(qh >> (8 * k));
}

XB_HD void quantize_block(const float* x, BlockQ5_0& b) {
    const float d = signed_absmax(x, kQK) / -16;
    const float id = inverse_or_zero(d);
    b.d = f32_to_f16(d);
    int q[kQK];
    for (int j = 0; j < kQK; ++j) q[j] = min_value(31, static_cast<int>(x[j] * id + 16.5f));
    pack_q5(q, b);
}

XB_HD void quantize_block(const float* x, BlockQ5_1& b) {
    float min = 0.0f;
    const float id = set_affine_header(x, 31, b, min);
    int q[kQK];
    for (int j = 0; j < kQK; ++j) q[j] = min_value(31, static_cast<int>((x[j] - min) * id + 0.5f));
    pack_q5(q, b);
}

XB_HD void quantize_block(const float* x, BlockQ8_0& b) {
    const float d = largest_magnitude(x, kQK) / 127;  // NaN for a block holding one
    const float id = inverse_or_zero(d);
    b.d = f32_to_f16(d);
    for (int j = 0; j < kQK; ++j) b.qs[j] = static_cast<int8_t>(clamp_round(x[j] * id, -127, 127));
}

// --- k-quant quantization: least-squares scales (core/quant_fit.hpp) ----------------------------------

// The 8 sub-block scales and offsets of a q4_K / q5_K block, as 6-bit codes under the f16 super-block
// scales d and dmin, packed as k_scale_min reads them. Returns the effective scale and offset of each
// sub-block as the dequantization will see them.
template <typename Block>
XB_HD void pack_k_scales(const float* scale, const float* offset, Block& b, float* eff_scale, float* eff_offset) {
    const float max_scale = largest(scale, 8);
    const float max_offset = largest(offset, 8);
    b.d = f32_to_f16(max_scale / 63);
    b.dmin = f32_to_f16(max_offset / 63);
    const float d = f16_to_f32(b.d);
    const float dmin = f16_to_f32(b.dmin);
    zero_bytes(b.scales, sizeof b.scales);
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
XB_HD int quantize_affine(float x, float scale, float offset, int nmax) {
    return scale > 0 ? clamp_round((x + offset) / scale, 0, nmax) : 0;
}

XB_HD void quantize_block(const float* x, BlockQ4_K& b) {
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

XB_HD void quantize_block(const float* x, BlockQ5_K& b) {
    float scale[8], offset[8], eff_scale[8], eff_offset[8];
    for (int j = 0; j < 8; ++j) fit_affine(x + 32 * j, 32, 31, scale[j], offset[j]);
    pack_k_scales(scale, offset, b, eff_scale, eff_offset);
    zero_bytes(b.qh, sizeof b.qh);
    for (int pair = 0; pair < 4; ++pair) {
        for (int l = 0; l < 32; ++l) {
            const int lo = quantize_affine(x[64 * pair + l], eff_scale[2 * pair], eff_offset[2 * pair], 31);
            const int hi = quantize_affine(x[64 * pair + 32 + l], eff_scale[2 * pair + 1], eff_offset[2 * pair + 1], 31);
            b.qs[32 * pair + l] = static_cast<uint8_t>((lo & 0x0F) | ((hi & 0x0F) << 4));
            b.qh[l] |= static_cast<uint8_t>(((lo >> 4) << (2 * pair)) | ((hi >> 4) << (2 * pair + 1)));
        }
    }
}

XB_HD void quantize_block(const float* x, BlockQ6_K& b) {
    float scale[16];
    float amax = 0.0f;
    for (int j = 0; j < 16; ++j) {
        scale[j] = fit_symmetric(x + 16 * j, 16, -32, 31, 0.25f);
        amax = max_value(amax, fabsf(scale[j]));
    }
    b.d = f32_to_f16(amax / 127);
    const float d = f16_to_f32(b.d);
    zero_bytes(b.ql, sizeof b.ql);
    zero_bytes(b.qh, sizeof b.qh);
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

// A q8_K block's step d and its inverse, from the block's largest magnitude (ggml's rounding: the
// inverse first, d as its reciprocal). A NaN maximum makes both NaN, so the products the block
// enters are NaN, not those of a block of zeros; an all-zero block gets 0 for both. The AVX2
// quantizer (cpu_kernels/quant_dot_avx2.cpp) takes the same.
struct Q8KStep {
    float d;
    float inverse;
};
XB_HD Q8KStep q8k_step(float amax) {
    const float inverse = amax != 0.0f ? 127.0f / amax : 0.0f;
    return {amax != 0.0f ? 1.0f / inverse : 0.0f, inverse};
}

XB_HD void quantize_block(const float* x, BlockQ8_K& b) {
    const Q8KStep step = q8k_step(largest_magnitude(x, kQKK));
    b.d = step.d;
    for (int j = 0; j < kQKK; ++j) b.qs[j] = static_cast<int8_t>(clamp_round(x[j] * step.inverse, -127, 127));
    for (int g = 0; g < kQKK / 16; ++g) {
        int sum = 0;
        for (int l = 0; l < 16; ++l) sum += b.qs[16 * g + l];
        b.bsums[g] = static_cast<int16_t>(sum);
    }
}

}  // namespace xb
