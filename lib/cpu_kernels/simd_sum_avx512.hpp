// Horizontal sums of 512-bit float vectors, for the translation units compiled for AVX-512 (the
// bf16 kernels, the AVX-512 quantized dots). gcc 12's plain 512-bit extracts and
// _mm512_reduce_add_ps trip -Wuninitialized inside its own headers, so the halves are taken with
// the masked extract, whose pass-through is given. Not a public header: only AVX-512 translation
// units may include it; its functions sit in an anonymous namespace, one copy per unit.
#pragma once

#include <immintrin.h>

namespace xb::cpu_kernels {

namespace {

// The low and high 256-bit halves of v added lane by lane.
[[gnu::always_inline]] inline __m256 add_halves(__m512 v) {
    const __m512d bits = _mm512_castps_pd(v);
    const __m256 lo = _mm256_castpd_ps(_mm512_mask_extractf64x4_pd(_mm256_setzero_pd(), 0xF, bits, 0));
    const __m256 hi = _mm256_castpd_ps(_mm512_mask_extractf64x4_pd(_mm256_setzero_pd(), 0xF, bits, 1));
    return _mm256_add_ps(lo, hi);
}

// The sum of v's 16 lanes: halves, then quarters, then pairs.
[[gnu::always_inline]] inline float hsum16(__m512 v) {
    const __m256 s8 = add_halves(v);
    __m128 s = _mm_add_ps(_mm256_castps256_ps128(s8), _mm256_extractf128_ps(s8, 1));
    s = _mm_add_ps(s, _mm_movehl_ps(s, s));
    return _mm_cvtss_f32(_mm_add_ss(s, _mm_shuffle_ps(s, s, 1)));
}

}  // namespace

}  // namespace xb::cpu_kernels
