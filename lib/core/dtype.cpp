#include "core/dtype.hpp"

#include <array>

#if defined(__AVX__) || defined(__AVX2__)
#include <immintrin.h>
#endif

namespace xb {

namespace {
constexpr std::array<DTypeTraits, kDTypeCount> kTraits = {{
    {"f32", 1, 4, true},
    {"f16", 1, 2, true},
    {"bf16", 1, 2, true},
    {"i32", 1, 4, false},
    {"i64", 1, 8, false},
}};
}  // namespace

const DTypeTraits& dtype_traits(DType t) { return kTraits[static_cast<size_t>(t)]; }

size_t row_size(DType t, int64_t n) {
    return static_cast<size_t>(n / blck_size(t)) * type_size(t);
}

std::optional<DType> dtype_from_name(std::string_view name) {
    for (int i = 0; i < kDTypeCount; ++i) {
        if (name == kTraits[i].name) return static_cast<DType>(i);
    }
    return std::nullopt;
}

// The row converters are on hot paths (packing weights for mul_mat, copies): 8 lanes at a time
// where the CPU has F16C / AVX2, the scalar definitions for the tail and elsewhere.
void f16_to_f32_row(const uint16_t* src, float* dst, int64_t n) {
    int64_t i = 0;
#if defined(__F16C__) && defined(__AVX__)
    for (; i + 8 <= n; i += 8) {
        _mm256_storeu_ps(dst + i, _mm256_cvtph_ps(_mm_loadu_si128(reinterpret_cast<const __m128i*>(src + i))));
    }
#endif
    for (; i < n; ++i) dst[i] = f16_to_f32(src[i]);
}
void f32_to_f16_row(const float* src, uint16_t* dst, int64_t n) {
    int64_t i = 0;
#if defined(__F16C__) && defined(__AVX__)
    for (; i + 8 <= n; i += 8) {
        const __m128i h = _mm256_cvtps_ph(_mm256_loadu_ps(src + i), _MM_FROUND_TO_NEAREST_INT);
        _mm_storeu_si128(reinterpret_cast<__m128i*>(dst + i), h);
    }
#endif
    for (; i < n; ++i) dst[i] = f32_to_f16(src[i]);
}
void bf16_to_f32_row(const uint16_t* src, float* dst, int64_t n) {
    int64_t i = 0;
#if defined(__AVX2__)
    for (; i + 8 <= n; i += 8) {
        const __m256i w = _mm256_cvtepu16_epi32(_mm_loadu_si128(reinterpret_cast<const __m128i*>(src + i)));
        _mm256_storeu_ps(dst + i, _mm256_castsi256_ps(_mm256_slli_epi32(w, 16)));
    }
#endif
    for (; i < n; ++i) dst[i] = bf16_to_f32(src[i]);
}
void f32_to_bf16_row(const float* src, uint16_t* dst, int64_t n) {
    for (int64_t i = 0; i < n; ++i) dst[i] = f32_to_bf16(src[i]);
}

bool convert_row(DType src_type, const void* src, DType dst_type, void* dst, int64_t n) {
    if (src_type == dst_type) {
        std::memcpy(dst, src, row_size(src_type, n));
        return true;
    }
    if (!is_float_type(src_type) || !is_float_type(dst_type)) return false;
    if (src_type == DType::F32 && dst_type == DType::F16) {
        f32_to_f16_row(static_cast<const float*>(src), static_cast<uint16_t*>(dst), n);
    } else if (src_type == DType::F32 && dst_type == DType::BF16) {
        f32_to_bf16_row(static_cast<const float*>(src), static_cast<uint16_t*>(dst), n);
    } else if (src_type == DType::F16 && dst_type == DType::F32) {
        f16_to_f32_row(static_cast<const uint16_t*>(src), static_cast<float*>(dst), n);
    } else if (src_type == DType::BF16 && dst_type == DType::F32) {
        bf16_to_f32_row(static_cast<const uint16_t*>(src), static_cast<float*>(dst), n);
    } else {
        // f16 <-> bf16 goes through f32 one element at a time.
        const auto* s = static_cast<const uint8_t*>(src);
        auto* d = static_cast<uint8_t*>(dst);
        for (int64_t i = 0; i < n; ++i) {
            store_from_f32(dst_type, d + i * type_size(dst_type), load_as_f32(src_type, s + i * type_size(src_type)));
        }
    }
    return true;
}

}  // namespace xb
