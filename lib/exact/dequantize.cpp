#include "exact/dequantize.hpp"

#include <cstring>
#include <vector>

#include "core/quant.hpp"
#include "core/quant_blocks.hpp"
#include "core/quant_blocks_k_low.hpp"
#include "core/quant_formats.hpp"
#include "core/status.hpp"

namespace xb::exact {

namespace {

// ggml's f32 dequantization is exact for the formats whose values are one product of a scale and
// small integers: f16 scale (11 significant bits) x 6-bit sub-scale x quant of up to 7 bits stays
// within f32's 24 (q4_0, q5_0, q8_0, q3_K, q6_K, the IQ, TQ and FP4 formats: at most 24 bits, iq4_xs).
// Two kinds are not, and are read here in double instead:
//  - value = scale * q + offset (q4_1, q5_1) or d * sc * q - dmin * m (q2_K, q4_K, q5_K): each term
//    is exact in f32, their sum rounds. The block is decoded twice, once with the offset's scale
//    zeroed and once with the values' scale zeroed, so that each pass yields one term exactly; the
//    terms are added in double, exactly (they need at most 22 + 30 bits).
//  - q8_K (the activation format): an f32 scale times an 8-bit quant needs 31 bits.
template <typename Block>
void dequantize_two_terms(const void* src, double* dst, int64_t n, uint16_t Block::*value_scale,
                          uint16_t Block::*offset_scale) {
    constexpr int kElements = kBlockElems<Block>;
    float values[kElements];
    float offsets[kElements];
    for (int64_t i = 0; i < n / kElements; ++i) {
        Block b;
        std::memcpy(&b, static_cast<const std::byte*>(src) + i * static_cast<int64_t>(sizeof(Block)), sizeof(Block));
        const uint16_t offset_bits = b.*offset_scale;
        b.*offset_scale = 0;  // +0.0 in f16
        dequantize_block(b, values);
        b.*offset_scale = offset_bits;
        b.*value_scale = 0;
        dequantize_block(b, offsets);
        for (int j = 0; j < kElements; ++j) {
            dst[i * kElements + j] = static_cast<double>(values[j]) + static_cast<double>(offsets[j]);
        }
    }
}

void dequantize_q8_K(const void* src, double* dst, int64_t n) {
    for (int64_t i = 0; i < n / kQKK; ++i) {
        BlockQ8_K b;
        std::memcpy(&b, static_cast<const std::byte*>(src) + i * static_cast<int64_t>(sizeof(b)), sizeof(b));
        for (int j = 0; j < kQKK; ++j) dst[i * kQKK + j] = static_cast<double>(b.d) * b.qs[j];
    }
}

template <typename T, typename Convert>
void widen(const void* src, double* dst, int64_t n, Convert convert) {
    for (int64_t i = 0; i < n; ++i) {
        T v;
        std::memcpy(&v, static_cast<const std::byte*>(src) + i * static_cast<int64_t>(sizeof(T)), sizeof(T));
        dst[i] = static_cast<double>(convert(v));
    }
}

}  // namespace

void dequantize_row_exact(DType type, const void* src, double* dst, int64_t n) {
    switch (type) {
        case DType::F32: return widen<float>(src, dst, n, [](float v) { return v; });
        case DType::F16: return widen<uint16_t>(src, dst, n, f16_to_f32);
        case DType::BF16: return widen<uint16_t>(src, dst, n, bf16_to_f32);
        case DType::I32: return widen<int32_t>(src, dst, n, [](int32_t v) { return v; });
        case DType::I64: return widen<int64_t>(src, dst, n, [](int64_t v) { return v; });
        case DType::Q4_1: return dequantize_two_terms(src, dst, n, &BlockQ4_1::d, &BlockQ4_1::m);
        case DType::Q5_1: return dequantize_two_terms(src, dst, n, &BlockQ5_1::d, &BlockQ5_1::m);
        case DType::Q2_K: return dequantize_two_terms(src, dst, n, &BlockQ2_K::d, &BlockQ2_K::dmin);
        case DType::Q4_K: return dequantize_two_terms(src, dst, n, &BlockQ4_K::d, &BlockQ4_K::dmin);
        case DType::Q5_K: return dequantize_two_terms(src, dst, n, &BlockQ5_K::d, &BlockQ5_K::dmin);
        case DType::Q8_K: return dequantize_q8_K(src, dst, n);
        default: break;
    }
    XB_CHECK_MSG(is_quantized(type), "dequantize_row_exact: unknown type");
    std::vector<float> values(static_cast<size_t>(n));
    dequantize_row(type, src, values.data(), n);
    for (int64_t i = 0; i < n; ++i) dst[i] = values[static_cast<size_t>(i)];
}

}  // namespace xb::exact
