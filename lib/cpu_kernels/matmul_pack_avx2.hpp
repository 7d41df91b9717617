// Panel packing (GemmKernel::pack) with AVX: 8 x 8 blocks transposed in registers. Included by the
// AVX2 and AVX-512 tile files only, each compiled for its ISA, so everything here has internal
// linkage: every translation unit keeps its own copy built with its own instructions.
#pragma once

#include <immintrin.h>

#include <algorithm>
#include <cstdint>
#include <cstring>

#include "cpu_kernels/matmul_tiles_impl.hpp"

namespace xb::cpu_kernels {
namespace {

// r[i] = row i of an 8 x 8 block in; column i out.
inline void transpose8x8(__m256 (&r)[8]) {
    __m256 t[8];
    for (int i = 0; i < 8; i += 2) {
        t[i] = _mm256_unpacklo_ps(r[i], r[i + 1]);      // [a0 b0 a1 b1 | a4 b4 a5 b5]
        t[i + 1] = _mm256_unpackhi_ps(r[i], r[i + 1]);  // [a2 b2 a3 b3 | a6 b6 a7 b7]
    }
    __m256 s[8];
    for (int i = 0; i < 8; i += 4) {
        s[i] = _mm256_shuffle_ps(t[i], t[i + 2], 0x44);      // column 0 | 4 of rows i..i+3
        s[i + 1] = _mm256_shuffle_ps(t[i], t[i + 2], 0xee);  // 1 | 5
        s[i + 2] = _mm256_shuffle_ps(t[i + 1], t[i + 3], 0x44);  // 2 | 6
        s[i + 3] = _mm256_shuffle_ps(t[i + 1], t[i + 3], 0xee);  // 3 | 7
    }
    for (int i = 0; i < 4; ++i) {
        r[i] = _mm256_permute2f128_ps(s[i], s[i + 4], 0x20);
        r[i + 4] = _mm256_permute2f128_ps(s[i], s[i + 4], 0x31);
    }
}

// The first n (< 8) floats of v to out, with no write past out[n].
inline void store_first(float* out, __m256 v, int n) {
    __m128 part = _mm256_castps256_ps128(v);
    if (n >= 4) {
        _mm_storeu_ps(out, part);
        out += 4;
        n -= 4;
        part = _mm256_extractf128_ps(v, 1);
    }
    if (n >= 2) {
        _mm_storel_pi(reinterpret_cast<__m64*>(out), part);
        out += 2;
        n -= 2;
        part = _mm_movehl_ps(part, part);
    }
    if (n == 1) _mm_store_ss(out, part);
}

// The row element types a panel is packed from, each read 8 at a time as floats (exactly: f16 and
// bf16 widen without rounding) and one at a time for the tail.
struct F32Rows {
    using Elem = float;
    static __m256 load8(const float* p) { return _mm256_loadu_ps(p); }
    static float load1(const float* p) { return *p; }
};
struct F16Rows {
    using Elem = uint16_t;
    static __m256 load8(const uint16_t* p) { return _mm256_cvtph_ps(_mm_loadu_si128(reinterpret_cast<const __m128i*>(p))); }
    static float load1(const uint16_t* p) { return _cvtsh_ss(*p); }
};
struct Bf16Rows {
    using Elem = uint16_t;
    static __m256 load8(const uint16_t* p) {
        const __m256i wide = _mm256_cvtepu16_epi32(_mm_loadu_si128(reinterpret_cast<const __m128i*>(p)));
        return _mm256_castsi256_ps(_mm256_slli_epi32(wide, 16));
    }
    static float load1(const uint16_t* p) {
        const uint32_t bits = static_cast<uint32_t>(*p) << 16;
        float v;
        std::memcpy(&v, &bits, sizeof v);
        return v;
    }
};

// out[k * rows + i] = the i-th lane of load8(src[i], k): the whole blocks of 8 k (k < whole, a
// multiple of 8) by 8 rows through transposes of 32-bit lanes, a group of fewer rows repeating its
// last one and storing only its own. Each group of 8 rows is read to its end before the next: 8
// streams from memory at a time rather than all the panel's (on Zen 4 the f16 packing of a 64-column
// product fell from 29 to 18 % of its time).
template <class Elem, class Load8>
inline void pack_blocks_avx(const Elem* const* src, int rows, int64_t whole, float* out, Load8 load8) {
    for (int g = 0; g < rows; g += 8) {
        const int n = std::min(8, rows - g);
        for (int64_t k = 0; k < whole; k += 8) {
            __m256 r[8];
            for (int i = 0; i < 8; ++i) r[i] = load8(src[g + std::min(i, n - 1)], k);
            transpose8x8(r);
            float* dst = out + k * rows + g;
            if (n == 8) {
                for (int c = 0; c < 8; ++c) _mm256_storeu_ps(dst + c * rows, r[c]);
            } else {
                for (int c = 0; c < 8; ++c) store_first(dst + c * rows, r[c], n);
            }
        }
    }
}

// out[k * rows + i] = src[i][k] as floats: blocks of 8 by pack_blocks_avx, the last k one by one.
// f16 and bf16 rows are converted as they are loaded: one pass, no f32 copy of the rows.
template <class Rows>
inline void pack_panel_avx(const typename Rows::Elem* const* src, int rows, int64_t len, float* out) {
    const int64_t whole = len / 8 * 8;
    pack_blocks_avx(src, rows, whole, out, [](const typename Rows::Elem* row, int64_t k) { return Rows::load8(row + k); });
    for (int64_t k = whole; k < len; ++k) {
        for (int i = 0; i < rows; ++i) out[k * rows + i] = Rows::load1(src[i] + k);
    }
}

// The GemmKernel packers of an AVX set.
inline constexpr GemmPackers kAvxPackers{&pack_panel_avx<F32Rows>, &pack_panel_avx<F16Rows>, &pack_panel_avx<Bf16Rows>};

}  // namespace
}  // namespace xb::cpu_kernels
