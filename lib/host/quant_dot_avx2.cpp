// The dot products with AVX2 (compiled with -mavx2 -mfma -mf16c; chosen at run time only on CPUs
// that have them). 32 weight q's meet 32 activation q's per step: _mm256_maddubs_epi16 multiplies
// unsigned by signed bytes into pairwise 16-bit sums (signed weights go through the sign trick:
// |w| times a with w's sign), _mm256_madd_epi16 widens to 32 bits, and each block's integer sum is
// scaled once in f32.
#include <immintrin.h>

#include <cmath>

#include "core/quant.hpp"
#include "host/quant_dot.hpp"

namespace xb::host {

namespace {

float hsum(__m256 v) {
    const __m128 s = _mm_add_ps(_mm256_castps256_ps128(v), _mm256_extractf128_ps(v, 1));
    const __m128 t = _mm_add_ps(s, _mm_movehl_ps(s, s));
    return _mm_cvtss_f32(_mm_add_ss(t, _mm_shuffle_ps(t, t, 1)));
}

int hsum(__m256i v) {
    const __m128i s = _mm_add_epi32(_mm256_castsi256_si128(v), _mm256_extracti128_si256(v, 1));
    const __m128i t = _mm_add_epi32(s, _mm_unpackhi_epi64(s, s));
    return _mm_cvtsi128_si32(_mm_add_epi32(t, _mm_shuffle_epi32(t, 1)));
}

const __m256i kOnes16 = _mm256_set1_epi16(1);

// Eight 32-bit sums of products of unsigned bytes u (< 128) and signed bytes s.
__m256i dot_u8_s8(__m256i u, __m256i s) { return _mm256_madd_epi16(_mm256_maddubs_epi16(u, s), kOnes16); }
// The same for two signed operands.
__m256i dot_s8_s8(__m256i x, __m256i y) { return dot_u8_s8(_mm256_sign_epi8(x, x), _mm256_sign_epi8(y, x)); }

// The 32 nibbles of 16 bytes as bytes: low nibbles first (elements 0..15), then the high ones.
__m256i nibbles(const uint8_t* qs) {
    const __m128i v = _mm_loadu_si128(reinterpret_cast<const __m128i*>(qs));
    const __m128i mask = _mm_set1_epi8(0x0F);
    return _mm256_set_m128i(_mm_and_si128(_mm_srli_epi16(v, 4), mask), _mm_and_si128(v, mask));
}

// Byte j is 0xFF when bit j of `bits` is set, else 0.
__m256i bytes_from_bits(uint32_t bits) {
    const __m256i spread = _mm256_shuffle_epi8(
        _mm256_set1_epi32(static_cast<int>(bits)),
        _mm256_setr_epi64x(0x0000000000000000, 0x0101010101010101, 0x0202020202020202, 0x0303030303030303));
    // Every bit set except, in byte j, bit j % 8: all ones exactly where that bit was set.
    const __m256i others = _mm256_set1_epi64x(0x7fbfdfeff7fbfdfe);
    return _mm256_cmpeq_epi8(_mm256_or_si256(spread, others), _mm256_set1_epi64x(-1));
}

__m256i load32(const int8_t* p) { return _mm256_loadu_si256(reinterpret_cast<const __m256i*>(p)); }
__m256i load32(const uint8_t* p) { return _mm256_loadu_si256(reinterpret_cast<const __m256i*>(p)); }

void quantize_q8sum(const float* x, void* out, int64_t n) {
    auto* y = static_cast<BlockQ8Sum*>(out);
    const __m256 sign = _mm256_set1_ps(-0.0f);
    for (int64_t b = 0; b < n / kQK; ++b, x += kQK) {
        __m256 v[4];
        __m256 amax = _mm256_setzero_ps();
        for (int k = 0; k < 4; ++k) {
            v[k] = _mm256_loadu_ps(x + 8 * k);
            amax = _mm256_max_ps(amax, _mm256_andnot_ps(sign, v[k]));
        }
        __m128 m = _mm_max_ps(_mm256_castps256_ps128(amax), _mm256_extractf128_ps(amax, 1));
        m = _mm_max_ps(m, _mm_movehl_ps(m, m));
        m = _mm_max_ss(m, _mm_shuffle_ps(m, m, 1));
        const float d = _mm_cvtss_f32(m) / 127;
        const float id = d != 0.0f ? 1.0f / d : 0.0f;
        __m256i q32[4];
        for (int k = 0; k < 4; ++k) {
            // Round half away from zero, as std::round: add 0.5 with the value's sign, truncate.
            const __m256 s = _mm256_mul_ps(v[k], _mm256_set1_ps(id));
            const __m256 half = _mm256_or_ps(_mm256_and_ps(s, sign), _mm256_set1_ps(0.5f));
            q32[k] = _mm256_cvttps_epi32(_mm256_add_ps(s, half));
        }
        // 32-bit lanes to bytes; the packs interleave 128-bit lanes, the permute restores order.
        const __m256i q16a = _mm256_packs_epi32(q32[0], q32[1]);
        const __m256i q16b = _mm256_packs_epi32(q32[2], q32[3]);
        __m256i q8 = _mm256_packs_epi16(q16a, q16b);
        q8 = _mm256_permutevar8x32_epi32(q8, _mm256_setr_epi32(0, 4, 1, 5, 2, 6, 3, 7));
        _mm256_storeu_si256(reinterpret_cast<__m256i*>(y[b].qs), q8);
        y[b].d = d;
        y[b].s = d * static_cast<float>(hsum(_mm256_madd_epi16(_mm256_maddubs_epi16(_mm256_set1_epi8(1), q8), kOnes16)));
    }
}

// Activations of the k-quants: rare next to the dot products, so the portable code serves.
void quantize_q8k(const float* x, void* out, int64_t n) { quantize_row(DType::Q8_K, x, out, n); }

float dot_q4_0(int64_t n, const void* wv, const void* av) {
    const auto* w = static_cast<const BlockQ4_0*>(wv);
    const auto* a = static_cast<const BlockQ8Sum*>(av);
    __m256 acc = _mm256_setzero_ps();
    for (int64_t b = 0; b < n / kQK; ++b) {
        const __m256i q = _mm256_sub_epi8(nibbles(w[b].qs), _mm256_set1_epi8(8));
        const __m256i isum = dot_s8_s8(q, load32(a[b].qs));
        const __m256 scale = _mm256_set1_ps(f16_to_f32(w[b].d) * a[b].d);
        acc = _mm256_fmadd_ps(scale, _mm256_cvtepi32_ps(isum), acc);
    }
    return hsum(acc);
}

float dot_q4_1(int64_t n, const void* wv, const void* av) {
    const auto* w = static_cast<const BlockQ4_1*>(wv);
    const auto* a = static_cast<const BlockQ8Sum*>(av);
    __m256 acc = _mm256_setzero_ps();
    float mins = 0.0f;
    for (int64_t b = 0; b < n / kQK; ++b) {
        const __m256i isum = dot_u8_s8(nibbles(w[b].qs), load32(a[b].qs));
        acc = _mm256_fmadd_ps(_mm256_set1_ps(f16_to_f32(w[b].d) * a[b].d), _mm256_cvtepi32_ps(isum), acc);
        mins += f16_to_f32(w[b].m) * a[b].s;
    }
    return hsum(acc) + mins;
}

// The 32 five-bit q's of a q5 block.
__m256i q5(const uint8_t* qs, const uint8_t* qh) {
    const __m256i high = _mm256_and_si256(bytes_from_bits(load_u32_le(qh)), _mm256_set1_epi8(0x10));
    return _mm256_or_si256(nibbles(qs), high);
}

float dot_q5_0(int64_t n, const void* wv, const void* av) {
    const auto* w = static_cast<const BlockQ5_0*>(wv);
    const auto* a = static_cast<const BlockQ8Sum*>(av);
    __m256 acc = _mm256_setzero_ps();
    for (int64_t b = 0; b < n / kQK; ++b) {
        const __m256i q = _mm256_sub_epi8(q5(w[b].qs, w[b].qh), _mm256_set1_epi8(16));
        const __m256i isum = dot_s8_s8(q, load32(a[b].qs));
        acc = _mm256_fmadd_ps(_mm256_set1_ps(f16_to_f32(w[b].d) * a[b].d), _mm256_cvtepi32_ps(isum), acc);
    }
    return hsum(acc);
}

float dot_q5_1(int64_t n, const void* wv, const void* av) {
    const auto* w = static_cast<const BlockQ5_1*>(wv);
    const auto* a = static_cast<const BlockQ8Sum*>(av);
    __m256 acc = _mm256_setzero_ps();
    float mins = 0.0f;
    for (int64_t b = 0; b < n / kQK; ++b) {
        const __m256i isum = dot_u8_s8(q5(w[b].qs, w[b].qh), load32(a[b].qs));
        acc = _mm256_fmadd_ps(_mm256_set1_ps(f16_to_f32(w[b].d) * a[b].d), _mm256_cvtepi32_ps(isum), acc);
        mins += f16_to_f32(w[b].m) * a[b].s;
    }
    return hsum(acc) + mins;
}

float dot_q8_0(int64_t n, const void* wv, const void* av) {
    const auto* w = static_cast<const BlockQ8_0*>(wv);
    const auto* a = static_cast<const BlockQ8Sum*>(av);
    __m256 acc = _mm256_setzero_ps();
    for (int64_t b = 0; b < n / kQK; ++b) {
        const __m256i isum = dot_s8_s8(load32(w[b].qs), load32(a[b].qs));
        acc = _mm256_fmadd_ps(_mm256_set1_ps(f16_to_f32(w[b].d) * a[b].d), _mm256_cvtepi32_ps(isum), acc);
    }
    return hsum(acc);
}

// q4_K / q5_K: per pair of sub-blocks, the 64 q's of one 32-byte load (low nibbles: sub-block 2p,
// high: 2p + 1), each sub-block's 16-bit pair sums weighted by its 6-bit scale in _mm256_madd_epi16.
template <typename Block, bool kFifthBit>
float dot_k_affine(int64_t n, const void* wv, const void* av) {
    const auto* w = static_cast<const Block*>(wv);
    const auto* a = static_cast<const BlockQ8_K*>(av);
    const __m256i low4 = _mm256_set1_epi8(0x0F);
    float sum = 0.0f;
    for (int64_t b = 0; b < n / kQKK; ++b) {
        int sc[8], m[8];
        int mins = 0;
        for (int j = 0; j < 8; ++j) {
            k_scale_min(w[b].scales, j, sc[j], m[j]);
            mins += m[j] * (a[b].bsums[2 * j] + a[b].bsums[2 * j + 1]);
        }
        __m256i hbits{};
        if constexpr (kFifthBit) hbits = load32(w[b].qh);
        __m256i scaled = _mm256_setzero_si256();
        for (int p = 0; p < 4; ++p) {
            const __m256i raw = load32(w[b].qs + 32 * p);
            __m256i lo = _mm256_and_si256(raw, low4);
            __m256i hi = _mm256_and_si256(_mm256_srli_epi16(raw, 4), low4);
            if constexpr (kFifthBit) {
                const __m256i one = _mm256_set1_epi8(1);
                lo = _mm256_or_si256(lo, _mm256_slli_epi16(_mm256_and_si256(_mm256_srli_epi16(hbits, 2 * p), one), 4));
                hi = _mm256_or_si256(hi, _mm256_slli_epi16(_mm256_and_si256(_mm256_srli_epi16(hbits, 2 * p + 1), one), 4));
            }
            const __m256i plo = _mm256_maddubs_epi16(lo, load32(a[b].qs + 64 * p));
            const __m256i phi = _mm256_maddubs_epi16(hi, load32(a[b].qs + 64 * p + 32));
            scaled = _mm256_add_epi32(scaled, _mm256_madd_epi16(plo, _mm256_set1_epi16(static_cast<int16_t>(sc[2 * p]))));
            scaled = _mm256_add_epi32(scaled, _mm256_madd_epi16(phi, _mm256_set1_epi16(static_cast<int16_t>(sc[2 * p + 1]))));
        }
        sum += f16_to_f32(w[b].d) * a[b].d * static_cast<float>(hsum(scaled)) -
               f16_to_f32(w[b].dmin) * a[b].d * static_cast<float>(mins);
    }
    return sum;
}

// q6_K: for each half of 128 and each group of 32, q = low nibble | 2 high bits (0..63); the -32
// offset becomes -32 * the activations' 16-sums (bsums), and each group's two 16-element halves get
// their scales in the 128-bit lanes of one _mm256_madd_epi16.
float dot_q6_K(int64_t n, const void* wv, const void* av) {
    const auto* w = static_cast<const BlockQ6_K*>(wv);
    const auto* a = static_cast<const BlockQ8_K*>(av);
    const __m256i low4 = _mm256_set1_epi8(0x0F);
    const __m256i low2 = _mm256_set1_epi8(0x03);
    float sum = 0.0f;
    for (int64_t b = 0; b < n / kQKK; ++b) {
        int offsets = 0;
        for (int g = 0; g < 16; ++g) offsets += w[b].scales[g] * a[b].bsums[g];
        __m256i scaled = _mm256_setzero_si256();
        for (int h = 0; h < 2; ++h) {
            const __m256i ql0 = load32(w[b].ql + 64 * h);
            const __m256i ql1 = load32(w[b].ql + 64 * h + 32);
            const __m256i qh = load32(w[b].qh + 32 * h);
            for (int g = 0; g < 4; ++g) {
                const __m256i ql = g % 2 == 0 ? ql0 : ql1;
                const __m256i lo = g < 2 ? _mm256_and_si256(ql, low4) : _mm256_and_si256(_mm256_srli_epi16(ql, 4), low4);
                const __m256i hi = _mm256_and_si256(_mm256_srli_epi16(qh, 2 * g), low2);
                const __m256i q = _mm256_or_si256(lo, _mm256_slli_epi16(hi, 4));
                const int e = 128 * h + 32 * g;
                const __m256i pairs = _mm256_maddubs_epi16(q, load32(a[b].qs + e));
                const __m256i scales = _mm256_set_m128i(_mm_set1_epi16(w[b].scales[e / 16 + 1]),
                                                        _mm_set1_epi16(w[b].scales[e / 16]));
                scaled = _mm256_add_epi32(scaled, _mm256_madd_epi16(pairs, scales));
            }
        }
        sum += f16_to_f32(w[b].d) * a[b].d * static_cast<float>(hsum(scaled) - 32 * offsets);
    }
    return sum;
}

QuantDot make_table() {
    QuantDot t{};
    t.isa = Isa::Avx2;
    t.quantize_q8sum = quantize_q8sum;
    t.quantize_q8k = quantize_q8k;
    t.dot[static_cast<int>(DType::Q4_0)] = dot_q4_0;
    t.dot[static_cast<int>(DType::Q4_1)] = dot_q4_1;
    t.dot[static_cast<int>(DType::Q5_0)] = dot_q5_0;
    t.dot[static_cast<int>(DType::Q5_1)] = dot_q5_1;
    t.dot[static_cast<int>(DType::Q8_0)] = dot_q8_0;
    t.dot[static_cast<int>(DType::Q4_K)] = dot_k_affine<BlockQ4_K, false>;
    t.dot[static_cast<int>(DType::Q5_K)] = dot_k_affine<BlockQ5_K, true>;
    t.dot[static_cast<int>(DType::Q6_K)] = dot_q6_K;
    return t;
}

}  // namespace

const QuantDot& quant_dot_avx2() {
    static const QuantDot table = make_table();
    return table;
}

}  // namespace xb::host
