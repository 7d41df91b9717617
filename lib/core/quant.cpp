#include "core/quant.hpp"

#include <algorithm>
#include <cmath>
#include <cstring>

#include "core/quant_fit.hpp"
#include "core/quant_block_types.hpp"
#include "core/quantize_formats.hpp"
#include "core/status.hpp"

namespace xb {

const std::array<float, 256> kUe4m3HalfTable = [] {
    std::array<float, 256> table{};
    for (int x = 0; x < 256; ++x) table[static_cast<size_t>(x)] = ue4m3_half(static_cast<uint8_t>(x));
    return table;
}();

namespace {

// --- dequantization --------------------------------------------------------------------------------

template <typename Block>
void dequantize_blocks(const void* src, float* dst, int64_t n) {
    constexpr int kElements = kBlockElems<Block>;
    const auto* blocks = static_cast<const Block*>(src);
    for (int64_t i = 0; i < n / kElements; ++i) dequantize_block(blocks[i], dst + i * kElements);
}

// --- legacy quantization: ggml's reference rounding ----------------------------------------------------

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

// --- k-quant quantization: least-squares scales (core/quant_fit.hpp) ----------------------------------

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
        scale[j] = fit_symmetric(x + 16 * j, 16, -32, 31, 0.25f);
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

template <typename Block>
void quantize_blocks(const float* src, void* dst, int64_t n) {
    constexpr int kElements = kBlockElems<Block>;
    auto* blocks = static_cast<Block*>(dst);
    for (int64_t i = 0; i < n / kElements; ++i) quantize_block(src + i * kElements, blocks[i]);
}

// The formats with a quantize_block above or in core/quantize_formats.hpp.
template <typename Block>
concept Quantizable = requires(const float* x, Block& b) { quantize_block(x, b); };

}  // namespace

bool can_quantize(DType type) {
    return with_block_type(type, []<typename Block>(BlockTag<Block>) { return Quantizable<Block>; }, false);
}

double quantization_nmse_bound(DType type) {
    // Measured on uniform [-1, 1] rows: q4_0 4.3e-3, q4_1 3.8e-3, q5_0 9.7e-4, q5_1 8.6e-4,
    // q8_0 1.5e-5, q4_K 3.1e-3, q5_K 7.5e-4, q6_K 1.5e-4 (q8_K rounds like q8_0); q2_K 4.9e-2,
    // q3_K 1.4e-2, iq4_nl 7.0e-3, iq4_xs 7.1e-3, mxfp4 2.1e-2, tq1_0 / tq2_0 0.25 (ternary).
    // The read-only formats have none (0).
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
        case DType::Q2_K: return 7.5e-2;
        case DType::Q3_K: return 2.2e-2;
        case DType::IQ4_NL: return 1.1e-2;
        case DType::IQ4_XS: return 1.1e-2;
        case DType::MXFP4: return 3.2e-2;
        case DType::TQ1_0: return 0.37;
        case DType::TQ2_0: return 0.37;
        default: return 0.0;
    }
}

void dequantize_row(DType type, const void* src, float* dst, int64_t n) {
    const bool known = with_block_type(
        type,
        [&]<typename Block>(BlockTag<Block>) {
            dequantize_blocks<Block>(src, dst, n);
            return true;
        },
        false);
    XB_CHECK_MSG(known, "dequantize_row: not a quantized type");
}

void quantize_row(DType type, const float* src, void* dst, int64_t n) {
    const bool known = with_block_type(
        type,
        [&]<typename Block>(BlockTag<Block>) {
            if constexpr (Quantizable<Block>) {
                quantize_blocks<Block>(src, dst, n);
                return true;
            } else {
                return false;
            }
        },
        false);
    XB_CHECK_MSG(known, "quantize_row: not a type with a quantizer (see can_quantize)");
}

}  // namespace xb
