// The row conversions with AVX2 and F16C (compiled with -mavx2 -mfma -mf16c; chosen at run time
// only on CPUs that have them), eight elements at a time. Tails go to the scalar table's functions
// (another translation unit): this file calls no inline function shared with baseline code, whose
// AVX2-compiled copy the linker could otherwise keep for the whole program.
#include <immintrin.h>

#include "core/row_convert.hpp"

namespace xb {

namespace {

void f16_to_f32(const uint16_t* src, float* dst, int64_t n) {
    int64_t i = 0;
    for (; i + 8 <= n; i += 8) {
        _mm256_storeu_ps(dst + i, _mm256_cvtph_ps(_mm_loadu_si128(reinterpret_cast<const __m128i*>(src + i))));
    }
    row_converters_scalar().f16_to_f32(src + i, dst + i, n - i);
}

void f32_to_f16(const float* src, uint16_t* dst, int64_t n) {
    int64_t i = 0;
    for (; i + 8 <= n; i += 8) {
        const __m128i h = _mm256_cvtps_ph(_mm256_loadu_ps(src + i), _MM_FROUND_TO_NEAREST_INT);
        _mm_storeu_si128(reinterpret_cast<__m128i*>(dst + i), h);
    }
    row_converters_scalar().f32_to_f16(src + i, dst + i, n - i);
}

void bf16_to_f32(const uint16_t* src, float* dst, int64_t n) {
    int64_t i = 0;
    for (; i + 8 <= n; i += 8) {
        const __m256i w = _mm256_cvtepu16_epi32(_mm_loadu_si128(reinterpret_cast<const __m128i*>(src + i)));
        _mm256_storeu_ps(dst + i, _mm256_castsi256_ps(_mm256_slli_epi32(w, 16)));
    }
    row_converters_scalar().bf16_to_f32(src + i, dst + i, n - i);
}

// Round to nearest even by adding 0x7fff plus the lowest kept bit; a NaN keeps its top half with
// the quiet bit set (as core's f32_to_bf16).
void f32_to_bf16(const float* src, uint16_t* dst, int64_t n) {
    int64_t i = 0;
    const __m256i abs_mask = _mm256_set1_epi32(0x7fffffff);
    const __m256i inf = _mm256_set1_epi32(0x7f800000);
    for (; i + 8 <= n; i += 8) {
        const __m256i x = _mm256_castps_si256(_mm256_loadu_ps(src + i));
        const __m256i lsb = _mm256_and_si256(_mm256_srli_epi32(x, 16), _mm256_set1_epi32(1));
        const __m256i rounded = _mm256_srli_epi32(_mm256_add_epi32(_mm256_add_epi32(x, _mm256_set1_epi32(0x7fff)), lsb), 16);
        const __m256i quiet_nan = _mm256_or_si256(_mm256_srli_epi32(x, 16), _mm256_set1_epi32(0x40));
        const __m256i is_nan = _mm256_cmpgt_epi32(_mm256_and_si256(x, abs_mask), inf);
        const __m256i r = _mm256_blendv_epi8(rounded, quiet_nan, is_nan);
        // Pack the eight 32-bit results (each < 2^16) into 16 bits: packus works within 128-bit
        // lanes, so fix the lane order afterwards.
        const __m256i packed = _mm256_permute4x64_epi64(_mm256_packus_epi32(r, r), 0x08);
        _mm_storeu_si128(reinterpret_cast<__m128i*>(dst + i), _mm256_castsi256_si128(packed));
    }
    row_converters_scalar().f32_to_bf16(src + i, dst + i, n - i);
}

}  // namespace

const RowConverters& row_converters_avx2() {
    static constexpr RowConverters kTable{Isa::Avx2, &f16_to_f32, &f32_to_f16, &bf16_to_f32, &f32_to_bf16};
    return kTable;
}

}  // namespace xb
