// The AVX2 dot products of the legacy formats (q4_0 .. q8_0) and q4_K, q5_K, q6_K, and the
// activation quantizers (q8 blocks of 32, q8_K), for two tables: quant_dot_avx2.cpp's (compiled with
// -mavx2 -mfma -mf16c) and quant_dot_avx512.cpp's (compiled with AVX-512 as well, so the same code
// gets 32 vector registers and no longer rebuilds its shuffle constants inside the loops: on the
// Zen 4 VM the q6_K one-token product ran 15-40 % and q4_K's 5-10 % faster in the cache; that table
// has since taken a 512-bit q4_K dot of its own).
// Everything is in an unnamed namespace: each includer gets its own copy, built for its own
// instruction set.
//
// 32 weight q's meet 32 activation q's per step: _mm256_maddubs_epi16 multiplies unsigned by
// signed bytes into pairwise 16-bit sums (signed weights go through the sign trick: |w| times a
// with w's sign), _mm256_madd_epi16 widens to 32 bits, and each block's integer sum is scaled once
// in f32. A weight block is decoded once for all the columns of a call (up to kMaxDotColumns), so a
// batch pays the unpacking of the blocks once per four columns.
#pragma once

#include <immintrin.h>

#include <cmath>
#include <cstddef>

#include "core/quant_int_dot.hpp"
#include "core/quantize_blocks.hpp"
#include "cpu_kernels/quant_dot.hpp"
#include "cpu_kernels/quant_unit_decoders_avx2.hpp"
#include "cpu_kernels/weight_prefetch.hpp"

namespace xb::cpu_kernels {

namespace {


float hsum(__m128 s) {
    const __m128 t = _mm_add_ps(s, _mm_movehl_ps(s, s));
    return _mm_cvtss_f32(_mm_add_ss(t, _mm_shuffle_ps(t, t, 1)));
}
float hsum(__m256 v) { return hsum(_mm_add_ps(_mm256_castps256_ps128(v), _mm256_extractf128_ps(v, 1))); }

int hsum(__m256i v) {
    const __m128i s = _mm_add_epi32(_mm256_castsi256_si128(v), _mm256_extracti128_si256(v, 1));
    const __m128i t = _mm_add_epi32(s, _mm_unpackhi_epi64(s, s));
    return _mm_cvtsi128_si32(_mm_add_epi32(t, _mm_shuffle_epi32(t, 1)));
}

// Made where used: a namespace-scope __m256i could be initialised at program start, running AVX2
// on CPUs that lack it.
__m256i ones16() { return _mm256_set1_epi16(1); }

// This header is compiled twice: for the AVX2 table (quant_dot_avx2.cpp) and for the AVX-512 one
// (quant_dot_avx512.cpp, with AVX-512 VNNI), where each multiply-and-widen pair below is one VNNI
// instruction with the same result: the inputs never reach maddubs's 16-bit saturation.
#if defined(__AVX512VNNI__) && defined(__AVX512VL__)
#define XB_QUANT_DOT_VNNI 1
#endif

// Eight 32-bit sums of products of unsigned bytes u (at most 128: no 16-bit pair sum saturates)
// and signed bytes s (-127..127).
__m256i dot_u8_s8(__m256i u, __m256i s) {
#ifdef XB_QUANT_DOT_VNNI
    return _mm256_dpbusd_epi32(_mm256_setzero_si256(), u, s);
#else
    return _mm256_madd_epi16(_mm256_maddubs_epi16(u, s), ones16());
#endif
}

// acc + the sums of pairs of 16-bit products a * b, in 32-bit lanes.
__m256i add_madd(__m256i acc, __m256i a, __m256i b) {
#ifdef XB_QUANT_DOT_VNNI
    return _mm256_dpwssd_epi32(acc, a, b);
#else
    return _mm256_add_epi32(acc, _mm256_madd_epi16(a, b));
#endif
}

// 32 floats times `scale`, rounded half away from zero (as std::round), as 32 signed bytes in order.
__m256i round_to_bytes(const float* x, __m256 scale) {
    const __m256 sign = _mm256_set1_ps(-0.0f);
    __m256i q32[4];
    for (int k = 0; k < 4; ++k) {
        const __m256 s = _mm256_mul_ps(_mm256_loadu_ps(x + 8 * k), scale);
        const __m256 half = _mm256_or_ps(_mm256_and_ps(s, sign), _mm256_set1_ps(0.5f));
        q32[k] = _mm256_cvttps_epi32(_mm256_add_ps(s, half));
    }
    // 32-bit lanes to bytes; the packs interleave 128-bit lanes, the permute restores order.
    const __m256i q8 = _mm256_packs_epi16(_mm256_packs_epi32(q32[0], q32[1]), _mm256_packs_epi32(q32[2], q32[3]));
    return _mm256_permutevar8x32_epi32(q8, _mm256_setr_epi32(0, 4, 1, 5, 2, 6, 3, 7));
}

// The largest |x| of n (a multiple of 8) floats, NaN when any is NaN: the integer max of the
// magnitudes' bits (core/quant_fit.hpp's largest_magnitude), where maxps would drop a NaN met in
// some positions and the block would quantize as if it were finite.
float abs_max(const float* x, int n) {
    const __m256i magnitude = _mm256_set1_epi32(0x7FFFFFFF);
    __m256i amax = _mm256_setzero_si256();
    for (int i = 0; i < n; i += 8) {
        amax = _mm256_max_epu32(amax, _mm256_and_si256(magnitude, _mm256_loadu_si256(reinterpret_cast<const __m256i*>(x + i))));
    }
    __m128i m = _mm_max_epu32(_mm256_castsi256_si128(amax), _mm256_extracti128_si256(amax, 1));
    m = _mm_max_epu32(m, _mm_unpackhi_epi64(m, m));
    m = _mm_max_epu32(m, _mm_shuffle_epi32(m, 1));
    return _mm_cvtss_f32(_mm_castsi128_ps(m));
}

void quantize_q8sum(const float* x, void* out, int64_t n) {
    auto* y = static_cast<BlockQ8Sum*>(out);
    for (int64_t b = 0; b < n / kQK; ++b, x += kQK) {
        const float d = q8_step(abs_max(x, kQK));
        const __m256i q8 = round_to_bytes(x, _mm256_set1_ps(q8_inverse_step(d)));
        _mm256_storeu_si256(reinterpret_cast<__m256i*>(y[b].qs), q8);
        const Q8Scale stored =
            q8_stored_scale(d, hsum(_mm256_madd_epi16(_mm256_maddubs_epi16(_mm256_set1_epi8(1), q8), ones16())));
        y[b].d = stored.d;
        y[b].s = stored.s;
    }
}

// The k-quants' activations (core/quant.cpp's q8_K rounding): one scale per 256, sums per 16.
// Once per column of every product, so the scalar rounding would cost as much as a mat-vec's dots.
void quantize_q8k(const float* x, void* out, int64_t n) {
    auto* y = static_cast<BlockQ8_K*>(out);
    for (int64_t b = 0; b < n / kQKK; ++b, x += kQKK) {
        const Q8KStep step = q8k_step(abs_max(x, kQKK));  // the portable quantizer's (NaN stays NaN)
        y[b].d = step.d;
        for (int v = 0; v < kQKK / 32; ++v) {
            const __m256i q8 = round_to_bytes(x + 32 * v, _mm256_set1_ps(step.inverse));
            _mm256_storeu_si256(reinterpret_cast<__m256i*>(y[b].qs + 32 * v), q8);
            // Sums of 4 bytes per 32-bit lane, then of the lane's 4: one per 16 bytes.
            __m256i sums = _mm256_madd_epi16(_mm256_maddubs_epi16(_mm256_set1_epi8(1), q8), ones16());
            sums = _mm256_hadd_epi32(sums, sums);
            sums = _mm256_hadd_epi32(sums, sums);
            y[b].bsums[2 * v] = static_cast<int16_t>(_mm256_extract_epi32(sums, 0));
            y[b].bsums[2 * v + 1] = static_cast<int16_t>(_mm256_extract_epi32(sums, 4));
        }
    }
}

template <typename Format>
struct LegacyDot {
    template <int NC>
    static void run(int64_t n, const void* wv, const std::byte* act, size_t stride, float* out) {
        const auto* w = static_cast<const typename Format::Block*>(wv);
        __m256 acc[NC];
        float offset[NC];
        for (int j = 0; j < NC; ++j) {
            acc[j] = _mm256_setzero_ps();
            offset[j] = 0.0f;
        }
        for (int64_t b = 0; b < n / kQK; ++b) {
            prefetch_weight_stream(w + b);
            const Decoded x = Format::decode(w[b]);
            const __m256i q = Format::kSigned ? _mm256_sign_epi8(x.q, x.q) : x.q;
            for (int j = 0; j < NC; ++j) {
                const BlockQ8Sum& a = reinterpret_cast<const BlockQ8Sum*>(act + stride * j)[b];
                __m256i qa = load32(a.qs);
                if constexpr (Format::kSigned) qa = _mm256_sign_epi8(qa, x.q);
                acc[j] = _mm256_fmadd_ps(_mm256_set1_ps(x.d * a.d), _mm256_cvtepi32_ps(dot_u8_s8(q, qa)), acc[j]);
                if constexpr (!Format::kSigned) offset[j] += x.m * a.s;
            }
        }
        for (int j = 0; j < NC; ++j) out[j] = hsum(acc[j]) + offset[j];
    }
};

// The eight 32-bit sums of a super-block's 16 activation sums weighted by `weights` (16 x int16).
__m256i weighted_bsums(__m256i weights, const BlockQ8_K& a) {
    return _mm256_madd_epi16(weights, _mm256_loadu_si256(reinterpret_cast<const __m256i*>(a.bsums)));
}

// Index vectors for _mm256_shuffle_epi8 that broadcast 16-bit word `lo` of a 128-bit lane over the
// low lane and word `hi` over the high lane.
__m256i word_broadcast(int lo, int hi) {
    return _mm256_set_m128i(_mm_set1_epi16(static_cast<int16_t>(0x0100 * (2 * hi + 1) + 2 * hi)),
                            _mm_set1_epi16(static_cast<int16_t>(0x0100 * (2 * lo + 1) + 2 * lo)));
}

// acc + dmin * a.d * (the eight sub-blocks' mins times their activation sums), in four lanes: the
// minimum term of a q4_K/q5_K block. Sub-block s's activation sum is bsums[2s] + bsums[2s + 1] (at
// most 2 * 16 * 127).
__m128 add_min_terms(__m128 acc, __m128i mins16, float dmin, const BlockQ8_K& a) {
    const __m128i bsums_lo = _mm_loadu_si128(reinterpret_cast<const __m128i*>(a.bsums));
    const __m128i bsums_hi = _mm_loadu_si128(reinterpret_cast<const __m128i*>(a.bsums + 8));
    const __m128i min_terms = _mm_madd_epi16(mins16, _mm_hadd_epi16(bsums_lo, bsums_hi));
    return _mm_fmadd_ps(_mm_set1_ps(dmin * a.d), _mm_cvtepi32_ps(min_terms), acc);
}

// q4_K / q5_K: per super-block the 6-bit scales and mins are unpacked once; then each 32-byte load
// (sub-blocks 2p and 2p + 1: low and high nibbles) is decoded once and multiplied into every
// column's integer sum, each sub-block's 16-bit pair sums weighted by its scale in
// _mm256_madd_epi16; a column's min term is one madd of the mins with its pairs of 16-sums.
template <typename Block, bool kFifthBit>
struct KAffineDot {
    template <int NC>
    static void run(int64_t n, const void* wv, const std::byte* act, size_t stride, float* out) {
        const auto* w = static_cast<const Block*>(wv);
        const __m256i low4 = _mm256_set1_epi8(0x0F);
        __m256 acc[NC];
        __m128 acc_min[NC];
        for (int j = 0; j < NC; ++j) {
            acc[j] = _mm256_setzero_ps();
            acc_min[j] = _mm_setzero_ps();
        }
        for (int64_t b = 0; b < n / kQKK; ++b) {
            prefetch_weight_stream(w + b);
            __m128i scales16, mins16;
            k_scales_mins(w[b].scales, scales16, mins16);
            const __m256i scales_both = _mm256_broadcastsi128_si256(scales16);
            __m256i hbits{};
            if constexpr (kFifthBit) hbits = load32(w[b].qh);
            __m256i scaled[NC];
            for (int j = 0; j < NC; ++j) scaled[j] = _mm256_setzero_si256();
            for (int p = 0; p < 4; ++p) {
                const __m256i raw = load32(w[b].qs + 32 * p);
                __m256i lo = _mm256_and_si256(raw, low4);
                __m256i hi = _mm256_and_si256(_mm256_srli_epi16(raw, 4), low4);
                if constexpr (kFifthBit) {
                    const __m256i one = _mm256_set1_epi8(1);
                    lo = _mm256_or_si256(lo, _mm256_slli_epi16(_mm256_and_si256(_mm256_srli_epi16(hbits, 2 * p), one), 4));
                    hi = _mm256_or_si256(hi, _mm256_slli_epi16(_mm256_and_si256(_mm256_srli_epi16(hbits, 2 * p + 1), one), 4));
                }
                const __m256i scale_lo = _mm256_shuffle_epi8(scales_both, word_broadcast(2 * p, 2 * p));
                const __m256i scale_hi = _mm256_shuffle_epi8(scales_both, word_broadcast(2 * p + 1, 2 * p + 1));
                for (int j = 0; j < NC; ++j) {
                    const int8_t* qa = reinterpret_cast<const BlockQ8_K*>(act + stride * j)[b].qs + 64 * p;
                    scaled[j] = add_madd(scaled[j], _mm256_maddubs_epi16(lo, load32(qa)), scale_lo);
                    scaled[j] = add_madd(scaled[j], _mm256_maddubs_epi16(hi, load32(qa + 32)), scale_hi);
                }
            }
            const float d = fp16(w[b].d), dmin = fp16(w[b].dmin);
            for (int j = 0; j < NC; ++j) {
                const BlockQ8_K& a = reinterpret_cast<const BlockQ8_K*>(act + stride * j)[b];
                acc[j] = _mm256_fmadd_ps(_mm256_set1_ps(d * a.d), _mm256_cvtepi32_ps(scaled[j]), acc[j]);
                acc_min[j] = add_min_terms(acc_min[j], mins16, dmin, a);
            }
        }
        for (int j = 0; j < NC; ++j) out[j] = hsum(acc[j]) - hsum(acc_min[j]);
    }
};

// q6_K: for each half of 128 and each group of 32, q = low nibble | 2 high bits (0..63), each
// group's two 16-element halves scaled in the 128-bit lanes of one _mm256_madd_epi16; the -32
// offset becomes -32 * the 16 scales times the activations' 16-sums.
struct Q6KDot {
    template <int NC>
    static void run(int64_t n, const void* wv, const std::byte* act, size_t stride, float* out) {
        const auto* w = static_cast<const BlockQ6_K*>(wv);
        const __m256i low4 = _mm256_set1_epi8(0x0F);
        const __m256i low2 = _mm256_set1_epi8(0x03);
        __m256 acc[NC];
        for (int j = 0; j < NC; ++j) acc[j] = _mm256_setzero_ps();
        for (int64_t b = 0; b < n / kQKK; ++b) {
            // The 16 scales as int16, each half broadcast over both lanes, then group t's two
            // scales (2t, 2t + 1) spread over the low and high lane by one shuffle.
            prefetch_weight_stream(w + b);
            const __m256i scales16 = _mm256_cvtepi8_epi16(_mm_loadu_si128(reinterpret_cast<const __m128i*>(w[b].scales)));
            const __m256i first_half = _mm256_permute2x128_si256(scales16, scales16, 0x00);
            const __m256i second_half = _mm256_permute2x128_si256(scales16, scales16, 0x11);
            __m256i q[8], scale[8];
            for (int t = 0; t < 8; ++t) {
                const int word = 2 * (t % 4);
                scale[t] = _mm256_shuffle_epi8(t < 4 ? first_half : second_half, word_broadcast(word, word + 1));
            }
            for (int h = 0; h < 2; ++h) {
                const __m256i ql0 = load32(w[b].ql + 64 * h);
                const __m256i ql1 = load32(w[b].ql + 64 * h + 32);
                const __m256i qh = load32(w[b].qh + 32 * h);
                for (int g = 0; g < 4; ++g) {
                    const __m256i ql = g % 2 == 0 ? ql0 : ql1;
                    const __m256i lo = g < 2 ? _mm256_and_si256(ql, low4) : _mm256_and_si256(_mm256_srli_epi16(ql, 4), low4);
                    const __m256i hi = _mm256_and_si256(_mm256_srli_epi16(qh, 2 * g), low2);
                    q[4 * h + g] = _mm256_or_si256(lo, _mm256_slli_epi16(hi, 4));
                }
            }
            const float d = fp16(w[b].d);
            for (int j = 0; j < NC; ++j) {
                const BlockQ8_K& a = reinterpret_cast<const BlockQ8_K*>(act + stride * j)[b];
                // Two chains: with VNNI each step is one multiply-add of several cycles' latency.
                __m256i scaled_even = _mm256_setzero_si256(), scaled_odd = _mm256_setzero_si256();
                for (int s = 0; s < 8; s += 2) {
                    scaled_even = add_madd(scaled_even, _mm256_maddubs_epi16(q[s], load32(a.qs + 32 * s)), scale[s]);
                    scaled_odd = add_madd(scaled_odd, _mm256_maddubs_epi16(q[s + 1], load32(a.qs + 32 * s + 32)), scale[s + 1]);
                }
                const __m256i scaled = _mm256_sub_epi32(_mm256_add_epi32(scaled_even, scaled_odd),
                                                        _mm256_slli_epi32(weighted_bsums(scales16, a), 5));
                acc[j] = _mm256_fmadd_ps(_mm256_set1_ps(d * a.d), _mm256_cvtepi32_ps(scaled), acc[j]);
            }
        }
        for (int j = 0; j < NC; ++j) out[j] = hsum(acc[j]);
    }
};

// One instantiation per column count, so that the column loops unroll and the accumulators stay
// in registers.
template <typename Kernel>
void dot_columns(int64_t n, const void* w, const void* act, size_t stride, int ncols, float* out) {
    const auto* a = static_cast<const std::byte*>(act);
    with_column_count(ncols, [&]<int kCols>() { Kernel::template run<kCols>(n, w, a, stride, out); });
}

// The quantizers and the dots above into `t`.
void set_core_dots(QuantDot& t) {
    t.quantize_q8sum = quantize_q8sum;
    t.quantize_q8k = quantize_q8k;
    t.dot[static_cast<int>(DType::Q4_0)] = dot_columns<LegacyDot<Q4_0Format>>;
    t.dot[static_cast<int>(DType::Q4_1)] = dot_columns<LegacyDot<Q4_1Format>>;
    t.dot[static_cast<int>(DType::Q5_0)] = dot_columns<LegacyDot<Q5_0Format>>;
    t.dot[static_cast<int>(DType::Q5_1)] = dot_columns<LegacyDot<Q5_1Format>>;
    t.dot[static_cast<int>(DType::Q8_0)] = dot_columns<LegacyDot<Q8_0Format>>;
    t.dot[static_cast<int>(DType::Q4_K)] = dot_columns<KAffineDot<BlockQ4_K, false>>;
    t.dot[static_cast<int>(DType::Q5_K)] = dot_columns<KAffineDot<BlockQ5_K, true>>;
    t.dot[static_cast<int>(DType::Q6_K)] = dot_columns<Q6KDot>;
}

}  // namespace

}  // namespace xb::cpu_kernels

#undef XB_QUANT_DOT_VNNI
