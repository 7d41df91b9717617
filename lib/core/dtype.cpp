#include "core/dtype.hpp"

#include <algorithm>
#include <array>
#include <cctype>
#include <cstddef>

#include "core/quant.hpp"
#include "core/row_convert.hpp"


namespace xb {

namespace {
constexpr std::array<DTypeTraits, kDTypeCount> kTraits = {{
    {"f32", 1, 4, true, false},
    {"f16", 1, 2, true, false},
    {"bf16", 1, 2, true, false},
    {"i32", 1, 4, false, false},
    {"i64", 1, 8, false, false},
    {"q4_0", 32, 18, false, true},
    {"q4_1", 32, 20, false, true},
    {"q5_0", 32, 22, false, true},
    {"q5_1", 32, 24, false, true},
    {"q8_0", 32, 34, false, true},
    {"q4_K", 256, 144, false, true},
    {"q5_K", 256, 176, false, true},
    {"q6_K", 256, 210, false, true},
    {"q8_K", 256, 292, false, true},
    {"q2_K", 256, 84, false, true},
    {"q3_K", 256, 110, false, true},
    {"iq2_xxs", 256, 66, false, true},
    {"iq2_xs", 256, 74, false, true},
    {"iq2_s", 256, 82, false, true},
    {"iq3_xxs", 256, 98, false, true},
    {"iq3_s", 256, 110, false, true},
    {"iq1_s", 256, 50, false, true},
    {"iq1_m", 256, 56, false, true},
    {"iq4_nl", 32, 18, false, true},
    {"iq4_xs", 256, 136, false, true},
    {"tq1_0", 256, 54, false, true},
    {"tq2_0", 256, 66, false, true},
    {"mxfp4", 32, 17, false, true},
    {"nvfp4", 64, 36, false, true},
}};

bool same_name(std::string_view a, std::string_view b) {
    if (a.size() != b.size()) return false;
    for (size_t i = 0; i < a.size(); ++i) {
        if (std::tolower(static_cast<unsigned char>(a[i])) != std::tolower(static_cast<unsigned char>(b[i]))) {
            return false;
        }
    }
    return true;
}
}  // namespace

const DTypeTraits& dtype_traits(DType t) { return kTraits[static_cast<size_t>(t)]; }

size_t row_size(DType t, int64_t n) {
    return static_cast<size_t>(n / blck_size(t)) * type_size(t);
}

std::optional<DType> dtype_from_name(std::string_view name) {
    for (int i = 0; i < kDTypeCount; ++i) {
        if (same_name(name, kTraits[static_cast<size_t>(i)].name)) return static_cast<DType>(i);
    }
    return std::nullopt;
}

// The row converters are on hot paths (packing weights for mul_mat, copies): the instruction set's
// table (core/row_convert.hpp).
void f16_to_f32_row(const uint16_t* src, float* dst, int64_t n) { row_converters().f16_to_f32(src, dst, n); }
void f32_to_f16_row(const float* src, uint16_t* dst, int64_t n) { row_converters().f32_to_f16(src, dst, n); }
void bf16_to_f32_row(const uint16_t* src, float* dst, int64_t n) { row_converters().bf16_to_f32(src, dst, n); }
void f32_to_bf16_row(const float* src, uint16_t* dst, int64_t n) { row_converters().f32_to_bf16(src, dst, n); }

namespace {

// Through f32, a chunk at a time: 256 elements are whole blocks of every quantized type.
bool convert_quantized_row(DType src_type, const void* src, DType dst_type, void* dst, int64_t n) {
    constexpr int64_t kChunk = 256;
    float buf[kChunk];
    const auto* s = static_cast<const std::byte*>(src);
    auto* d = static_cast<std::byte*>(dst);
    for (int64_t i = 0; i < n; i += kChunk) {
        const int64_t len = std::min(kChunk, n - i);
        const std::byte* from = s + row_size(src_type, i);
        std::byte* to = d + row_size(dst_type, i);
        if (is_quantized(src_type)) {
            dequantize_row(src_type, from, buf, len);
        } else {
            static_cast<void>(convert_row(src_type, from, DType::F32, buf, len));
        }
        if (is_quantized(dst_type)) {
            quantize_row(dst_type, buf, to, len);
        } else {
            static_cast<void>(convert_row(DType::F32, buf, dst_type, to, len));
        }
    }
    return true;
}

}  // namespace

bool convert_row(DType src_type, const void* src, DType dst_type, void* dst, int64_t n) {
    if (src_type == dst_type) {
        std::memcpy(dst, src, row_size(src_type, n));
        return true;
    }
    const auto numeric = [](DType t) { return is_float_type(t) || is_quantized(t); };
    if (!numeric(src_type) || !numeric(dst_type)) return false;
    if (is_quantized(dst_type) && !can_quantize(dst_type)) return false;  // read-only formats
    if (is_quantized(src_type) || is_quantized(dst_type)) return convert_quantized_row(src_type, src, dst_type, dst, n);
    if (src_type == DType::F32 && dst_type == DType::F16) {
        f32_to_f16_row(static_cast<const float*>(src), static_cast<uint16_t*>(dst), n);
    } else if (src_type == DType::F32 && dst_type == DType::BF16) {
        f32_to_bf16_row(static_cast<const float*>(src), static_cast<uint16_t*>(dst), n);
    } else if (src_type == DType::F16 && dst_type == DType::F32) {
        f16_to_f32_row(static_cast<const uint16_t*>(src), static_cast<float*>(dst), n);
    } else if (src_type == DType::BF16 && dst_type == DType::F32) {
        bf16_to_f32_row(static_cast<const uint16_t*>(src), static_cast<float*>(dst), n);
    } else {
        // f16 <-> bf16: through f32 a chunk at a time, with the row conversions above.
        constexpr int64_t kChunk = 256;
        float buf[kChunk];
        const auto* s = static_cast<const uint16_t*>(src);
        auto* d = static_cast<uint16_t*>(dst);
        for (int64_t i = 0; i < n; i += kChunk) {
            const int64_t len = std::min(kChunk, n - i);
            if (src_type == DType::F16) {
                f16_to_f32_row(s + i, buf, len);
                f32_to_bf16_row(buf, d + i, len);
            } else {
                bf16_to_f32_row(s + i, buf, len);
                f32_to_f16_row(buf, d + i, len);
            }
        }
    }
    return true;
}

}  // namespace xb
