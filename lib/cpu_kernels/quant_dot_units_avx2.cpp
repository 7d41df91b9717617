// The AVX2 dot products of the newer block formats (q2_K, q3_K, the IQ family, TQ, MXFP4, NVFP4;
// compiled with -mavx2 -mfma -mf16c, chosen at run time only on CPUs that have them).
//
// Each format's decoder (quant_unit_decoders_avx2.hpp) turns one 32-value unit of a weight block
// into 32 signed bytes in a register. The unit meets each column's 32 activations with maddubs (the
// sign trick: |w| times a with w's sign) into sixteen 16-bit pair sums, values 0..15 in the low
// eight and 16..31 in the high eight.
//   - The 256-value formats (q2_K, q3_K, iq1..iq3, iq4_xs, tq1_0, tq2_0), as ggml: the activations
//     are q8_K (one scale per 256) and every half's scale is an integer times the block's float
//     scale (iq2_xxs: (0.5 + s) / 4 = (2s + 1) / 8), so the pair sums are multiplied by the
//     integer scales (madd) and summed in int32 over the whole block, then scaled once.
//   - iq4_nl, mxfp4 and nvfp4 (blocks of 32 and 64) take q8_0-style activations, one float scale per
//     unit, as ggml.
// Each unit is decoded once for all the columns of a call.
#include <immintrin.h>

#include <cstddef>
#include <cstdint>
#include <type_traits>

#include "core/quant_block_types.hpp"
#include "cpu_kernels/quant_dot.hpp"
#include "cpu_kernels/quant_unit_decoders_avx2.hpp"
#include "cpu_kernels/weight_prefetch.hpp"

namespace xb::cpu_kernels {

namespace {

float hsum8(__m256 v) {
    __m128 s = _mm_add_ps(_mm256_castps256_ps128(v), _mm256_extractf128_ps(v, 1));
    s = _mm_add_ps(s, _mm_movehl_ps(s, s));
    return _mm_cvtss_f32(_mm_add_ss(s, _mm_shuffle_ps(s, s, 1)));
}

// --- the dot products -----------------------------------------------------------------------------------

// Unit u's two scales, each in the eight 16-bit lanes of its half of the register, as madd pairs
// the products of values 0..15 (low half) and 16..31 (high half).
__m256i unit_scales(__m256i lanes, int u) {
    const __m256i pair = _mm256_permutevar8x32_epi32(lanes, _mm256_set1_epi32(u));
    return _mm256_shuffle_epi8(pair, _mm256_set_epi64x(0x0302030203020302, 0x0302030203020302, 0x0100010001000100,
                                                       0x0100010001000100));
}

// The 16-bit pair sums of w times a: the sign trick, since maddubs takes unsigned times signed.
__m256i pair_sums(__m256i w, __m256i a) { return _mm256_maddubs_epi16(_mm256_sign_epi8(w, w), _mm256_sign_epi8(a, w)); }

// q2_K's minima: per 32-bit lane, the sum over two of the 16 groups of m_k times the activations'
// group sum (bsums), to be scaled by dmin; m_k is the high nibble of scales[k].
__m256i q2_K_minima(const BlockQ2_K& b, const BlockQ8_K& a) {
    const __m128i bytes = _mm_loadu_si128(reinterpret_cast<const __m128i*>(b.scales));
    const __m256i mins = _mm256_cvtepu8_epi16(_mm_and_si128(_mm_srli_epi16(bytes, 4), _mm_set1_epi8(0x0F)));
    return _mm256_madd_epi16(mins, _mm256_loadu_si256(reinterpret_cast<const __m256i*>(a.bsums)));
}

template <typename Block, int kCols>
void dot_super_cols(int64_t n, const Block* w, const std::byte* act, size_t act_stride, float* out) {
    constexpr int kUnits = kQKK / kUnitValues;
    const BlockQ8_K* column[kCols];
    for (int c = 0; c < kCols; ++c) column[c] = reinterpret_cast<const BlockQ8_K*>(act + act_stride * static_cast<size_t>(c));
    __m256 acc[kCols];
    __m256 minima[kCols];
    for (int c = 0; c < kCols; ++c) minima[c] = _mm256_setzero_ps();
    for (int c = 0; c < kCols; ++c) acc[c] = _mm256_setzero_ps();
    for (int64_t b = 0; b < n / kQKK; ++b) {
        __m256i isum[kCols];
        for (int c = 0; c < kCols; ++c) isum[c] = _mm256_setzero_si256();
        prefetch_weight_stream(w + b);
        const __m256i lanes = SuperDecoder<Block>::scales(w[b]);
        for (int u = 0; u < kUnits; ++u) {
            const __m256i q = SuperDecoder<Block>::unit(w[b], u);
            const __m256i scales = unit_scales(lanes, u);
            for (int c = 0; c < kCols; ++c) {
                const __m256i av = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(column[c][b].qs + kUnitValues * u));
                isum[c] = _mm256_add_epi32(isum[c], _mm256_madd_epi16(pair_sums(q, av), scales));
            }
        }
        const float scale = SuperDecoder<Block>::scale(w[b]);
        for (int c = 0; c < kCols; ++c) {
            const float d = column[c][b].d;
            acc[c] = _mm256_fmadd_ps(_mm256_cvtepi32_ps(isum[c]), _mm256_set1_ps(scale * d), acc[c]);
            if constexpr (std::is_same_v<Block, BlockQ2_K>) {
                const __m256 dmin = _mm256_set1_ps(fp16(w[b].dmin) * d);
                minima[c] = _mm256_fmadd_ps(_mm256_cvtepi32_ps(q2_K_minima(w[b], column[c][b])), dmin, minima[c]);
            }
        }
    }
    for (int c = 0; c < kCols; ++c) out[c] = hsum8(_mm256_sub_ps(acc[c], minima[c]));
}

template <typename Block>
void dot_super_avx2(int64_t n, const void* weights, const void* act, size_t act_stride, int ncols, float* out) {
    const auto* w = static_cast<const Block*>(weights);
    const auto* a = static_cast<const std::byte*>(act);
    with_column_count(ncols, [&]<int kCols>() { dot_super_cols<Block, kCols>(n, w, a, act_stride, out); });
}

template <typename Block, int kCols>
void dot_units_cols(int64_t n, const Block* w, const std::byte* act, size_t act_stride, float* out) {
    constexpr int kUnits = Block::kElems / kUnitValues;
    const BlockQ8Sum* column[kCols];
    for (int c = 0; c < kCols; ++c) column[c] = reinterpret_cast<const BlockQ8Sum*>(act + act_stride * static_cast<size_t>(c));
    const __m256i ones16 = _mm256_set1_epi16(1);
    __m256 acc[kCols];
    for (int c = 0; c < kCols; ++c) acc[c] = _mm256_setzero_ps();
    for (int64_t b = 0; b < n / Block::kElems; ++b) {
        prefetch_weight_stream(w + b);
        for (int u = 0; u < kUnits; ++u) {
            const UnitAvx2 unit = DecoderAvx2<Block>::decode(w[b], u);
            const __m256 scales = _mm256_set_m128(_mm_set1_ps(unit.scale[1]), _mm_set1_ps(unit.scale[0]));
            for (int c = 0; c < kCols; ++c) {
                const BlockQ8Sum& a = column[c][b * kUnits + u];
                const __m256i av = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(a.qs));
                const __m256i dots = _mm256_madd_epi16(pair_sums(unit.q, av), ones16);
                acc[c] = _mm256_fmadd_ps(_mm256_cvtepi32_ps(dots), _mm256_mul_ps(scales, _mm256_set1_ps(a.d)), acc[c]);
            }
        }
    }
    for (int c = 0; c < kCols; ++c) out[c] = hsum8(acc[c]);
}

template <typename Block>
void dot_units_avx2(int64_t n, const void* weights, const void* act, size_t act_stride, int ncols, float* out) {
    const auto* w = static_cast<const Block*>(weights);
    const auto* a = static_cast<const std::byte*>(act);
    with_column_count(ncols, [&]<int kCols>() { dot_units_cols<Block, kCols>(n, w, a, act_stride, out); });
}

}  // namespace

void add_unit_dots_avx2(QuantDot& table) {
    for (int t = 0; t < kDTypeCount; ++t) {
        with_block_type(
            static_cast<DType>(t),
            [&]<typename Block>(BlockTag<Block>) {
                if constexpr (requires { SuperDecoder<Block>::scale; }) {
                    table.dot[t] = dot_super_avx2<Block>;
                } else if constexpr (requires { DecoderAvx2<Block>::decode; }) {
                    table.dot[t] = dot_units_avx2<Block>;
                }
                return true;
            },
            false);
    }
}

}  // namespace xb::cpu_kernels
