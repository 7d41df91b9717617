#include "core/quant.hpp"

#include <array>

#include "core/quant_block_types.hpp"
#include "core/quantize_blocks.hpp"
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

template <typename Block>
void quantize_blocks(const float* src, void* dst, int64_t n) {
    constexpr int kElements = kBlockElems<Block>;
    auto* blocks = static_cast<Block*>(dst);
    for (int64_t i = 0; i < n / kElements; ++i) quantize_block(src + i * kElements, blocks[i]);
}

// The formats with a quantize_block in core/quantize_blocks.hpp or core/quantize_formats.hpp.
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
