// The AVX-512 row dot products (compiled with -mavx512f -mavx512bw -mavx512vl -mavx512vnni -mbmi2,
// chosen at run time only on CPUs that have them, see quant_dot.cpp): the codebook formats (iq1_s,
// iq1_m, iq2_xxs, iq2_xs, iq2_s, iq3_xxs, iq3_s), tq1_0 and q4_K (Q4KDot512); the legacy formats,
// q5_K and q6_K through the AVX2 code compiled here again (quant_dot_core_avx2.hpp); every other
// format takes the AVX2 table's dot.
//
// Why these: at one token their AVX2 dots are compute-bound, not memory-bound (about 25-30 vector
// instructions per 32 multiply-adds: a gather of four entries, the signs expanded from bits into
// byte masks, the sign trick on both operands). Here two units (64 values, a "pair") are decoded at
// once:
//   - one gather of eight 64-bit entries (iq2, iq1) or sixteen 32-bit ones (iq3). The indices'
//     high bits are spread to bytes in scalar code (pdep) and interleaved with the low bytes;
//   - the 64 signs of the sign formats become one mask register (bit j: value j is negative), which
//     negates the activations in one masked subtract, so the weights stay unsigned bytes. The 7-bit
//     sign indices of iq2_xxs, iq2_xs and iq3_xxs get their parity bit in scalar code (pdep into
//     bytes, a shift-xor fold), off the vector ports;
//   - the signed formats (iq1, tq1_0) are decoded as unsigned bytes u = w + offset, and
//     offset * sum(a) comes back out once per block from the activations' sums per 16 (bsums);
//     iq1_s's offset carries its per-unit delta, so its pairs need no delta at all;
//   - tq1_0's base-3 digits come from two multiplies per 16-bit lane (ternary_digits512).
// Then maddubs (pairs of products) and vpdpwssd by the integer scale of each group of 16 (one vpermw
// spreads the block's sixteen scales over the pair's lanes), or vpdpbusd alone for tq1_0 (no scales
// below the block's), summed in int32 over the super-block and scaled once, as the AVX2 dot
// (quant_dot_units_avx2.cpp) does. Overflow: maddubs's pair sums are at most 2 * 62 * 127
// (iq3_xxs's largest entry), below 2^15.
#include <immintrin.h>

#include <cstddef>
#include <cstdint>
#include <cstring>
#include <array>
#include <iterator>
#include <type_traits>

#include "core/quant_block_types.hpp"
#include "cpu_kernels/quant_dot.hpp"
#include "cpu_kernels/quant_dot_core_avx2.hpp"
#include "cpu_kernels/quant_unit_decoders_avx2.hpp"
#include "cpu_kernels/simd_sum_avx512.hpp"
#include "cpu_kernels/weight_prefetch.hpp"

namespace xb::cpu_kernels {

namespace {

constexpr int kPairs = kQKK / 64;  // two 32-value units per pair

// (The 512-bit intrinsics are the masked forms: gcc 12's header leaves the unmasked ones'
// pass-through undefined, which -Werror=maybe-uninitialized refuses.)
constexpr __mmask8 kAll8 = 0xFF;
constexpr __mmask16 kAll16 = 0xFFFF;

// v in the low 256 bits, zeros above; lo in the low 256 bits, hi in the high.
__m512i zero_extend(__m256i v) { return _mm512_mask_inserti64x4(_mm512_setzero_si512(), kAll8, _mm512_setzero_si512(), v, 0); }
__m512i concat(__m256i lo, __m256i hi) { return _mm512_mask_inserti64x4(_mm512_setzero_si512(), kAll8, zero_extend(lo), hi, 1); }

// Two units' 64 weights as unsigned bytes, and (sign formats) which of them are negative.
struct PairAvx512 {
    __m512i magnitudes;
    __mmask64 negative = 0;
};

// Eight 7-bit sign indices, one per byte, as their sign bytes (iq_sign_byte: bit 7 makes the count
// of set bits even). After the fold, bit 0 of each byte is the parity of that byte alone: each
// shift brings in only bits of the same byte at the positions that reach bit 0.
uint64_t sign_bytes8(uint64_t index7) {
    uint64_t parity = index7 ^ (index7 >> 4);
    parity ^= parity >> 2;
    parity ^= parity >> 1;
    return index7 | ((parity & 0x0101010101010101ull) << 7);
}
// Eight 7-bit fields packed 7 bits apart (bits 0..55), one per byte.
uint64_t seven_bit_fields_to_bytes(uint64_t packed) { return _pdep_u64(packed, 0x7F7F7F7F7F7F7F7Full); }

// Sign formats: the 64 sign bits as a mask.
__mmask64 sign_mask64(uint64_t sign_bytes) { return _cvtu64_mask64(sign_bytes); }
// The mask of eight 7-bit sign indices packed 7 bits apart (iq2_xxs, iq2_xs, iq3_xxs).
__mmask64 signs_of_indices(uint64_t packed) { return sign_mask64(sign_bytes8(seven_bit_fields_to_bytes(packed))); }

// Eight codebook indices in 32-bit lanes: low[i] | high byte i << 8 (the high bits spread to bytes
// in scalar code by pdep). Interleaving the bytes and widening the words is two shuffles, where
// shifting each lane's field out in vector lanes took five operations.
__m256i index_lanes8(const uint8_t* low, uint64_t high) {
    const __m128i words = _mm_unpacklo_epi8(_mm_loadl_epi64(reinterpret_cast<const __m128i*>(low)), _mm_cvtsi64_si128(static_cast<long long>(high)));
    return _mm256_cvtepu16_epi32(words);
}
__m512i gather64(const uint64_t* grid, __m256i index) {
    return _mm512_mask_i32gather_epi64(_mm512_setzero_si512(), kAll8, index, reinterpret_cast<const long long*>(grid), 8);
}
__m512i gather32(const uint32_t* grid, __m512i index) {
    return _mm512_mask_i32gather_epi32(_mm512_setzero_si512(), kAll16, index, reinterpret_cast<const int*>(grid), 4);
}

// Each format's PairDecoder<Block> gives pair(b, p), pair p's weights; scales(b), the block's
// integer scales, laid out as kScaleLanes says; and for the formats decoded as w + offset,
// correction(b, scales): -offset * scale for each group of 16, sixteen 16-bit lanes.
enum class ScaleLanes {
    PerGroup,  // one per group of 16 values, group g in 16-bit lane g
    PerUnit,   // one per unit of 32, unit u in 32-bit lane u
    None,      // tq1_0: the block's float scale only
};

template <typename Block>
struct PairDecoder;

// iq2_xxs: per unit 4 index bytes, then the word of 4 sign indices (and the scale); a pair's 16 bytes
// are idx A, aux A, idx B, aux B.
template <>
struct PairDecoder<BlockIQ2_XXS> {
    static constexpr ScaleLanes kScaleLanes = ScaleLanes::PerUnit;
    static __m256i scales(const BlockIQ2_XXS& b) { return SuperDecoder<BlockIQ2_XXS>::unit_scales(b); }
    static PairAvx512 pair(const BlockIQ2_XXS& b, int p) {
        const uint8_t* q = b.qs + 16 * p;
        const __m128i bytes = _mm_loadu_si128(reinterpret_cast<const __m128i*>(q));
        const __m256i index = _mm256_cvtepu8_epi32(_mm_shuffle_epi32(bytes, _MM_SHUFFLE(3, 1, 2, 0)));
        const __m512i v = gather64(kIq2xxsGrid, index);
        const uint64_t signs = (load_le32(q + 4) & 0x0FFFFFFFu) | (static_cast<uint64_t>(load_le32(q + 12) & 0x0FFFFFFFu) << 28);
        return {v, signs_of_indices(signs)};
    }
};

// iq2_xs: per 8 values a 16-bit word, a 9-bit index under a 7-bit sign index.
template <>
struct PairDecoder<BlockIQ2_XS> {
    static constexpr ScaleLanes kScaleLanes = ScaleLanes::PerGroup;
    static __m256i scales(const BlockIQ2_XS& b) { return SuperDecoder<BlockIQ2_XS>::scales(b); }
    static PairAvx512 pair(const BlockIQ2_XS& b, int p) {
        const uint8_t* q = b.qs + 16 * p;
        const __m128i words = _mm_loadu_si128(reinterpret_cast<const __m128i*>(q));
        const __m256i index = _mm256_and_si256(_mm256_cvtepu16_epi32(words), _mm256_set1_epi32(511));
        const __m512i v = gather64(kIq2xsGrid, index);
        constexpr uint64_t kSignFields = 0xFE00FE00FE00FE00ull;
        const uint64_t signs = _pext_u64(load_le64(q), kSignFields) | (_pext_u64(load_le64(q + 8), kSignFields) << 28);
        return {v, signs_of_indices(signs)};
    }
};

// iq2_s: 8-bit indices with 2 more bits each in qh (one byte per unit), explicit sign bytes.
template <>
struct PairDecoder<BlockIQ2_S> {
    static constexpr ScaleLanes kScaleLanes = ScaleLanes::PerGroup;
    static __m256i scales(const BlockIQ2_S& b) { return SuperDecoder<BlockIQ2_S>::scales(b); }
    static PairAvx512 pair(const BlockIQ2_S& b, int p) {
        const uint64_t high = _pdep_u64(load_u16_at(b.qh + 2 * p), 0x0303030303030303ull);
        return {gather64(kIq2sGrid, index_lanes8(b.qs + 8 * p, high)), sign_mask64(load_le64(b.signs + 8 * p))};
    }
};

// iq3_xxs: per unit 8 index bytes into 4-value entries; the sign words follow all 64 indices.
template <>
struct PairDecoder<BlockIQ3_XXS> {
    static constexpr ScaleLanes kScaleLanes = ScaleLanes::PerUnit;
    static __m256i scales(const BlockIQ3_XXS& b) { return SuperDecoder<BlockIQ3_XXS>::unit_scales(b); }
    static PairAvx512 pair(const BlockIQ3_XXS& b, int p) {
        const __m512i index = _mm512_maskz_cvtepu8_epi32(kAll16, _mm_loadu_si128(reinterpret_cast<const __m128i*>(b.qs + 16 * p)));
        const __m512i v = gather32(kIq3xxsGrid, index);
        const uint64_t signs = _pext_u64(load_le64(b.qs + kQKK / 4 + 8 * p), 0x0FFFFFFF0FFFFFFFull);  // the two aux words' sign fields
        return {v, signs_of_indices(signs)};
    }
};

// iq3_s: 8-bit indices with a ninth bit each in qh (bit j of qh[u] for entry j), explicit signs.
template <>
struct PairDecoder<BlockIQ3_S> {
    static constexpr ScaleLanes kScaleLanes = ScaleLanes::PerUnit;
    static __m256i scales(const BlockIQ3_S& b) { return SuperDecoder<BlockIQ3_S>::unit_scales(b); }
    static PairAvx512 pair(const BlockIQ3_S& b, int p) {
        const __m512i low = _mm512_maskz_cvtepu8_epi32(kAll16, _mm_loadu_si128(reinterpret_cast<const __m128i*>(b.qs + 16 * p)));
        // Bit j of the pair's 16 qh bits sets bit 8 of lane j.
        const __mmask16 high = _cvtu32_mask16(load_u16_at(b.qh + 2 * p));
        const __m512i index = _mm512_mask_or_epi32(low, high, low, _mm512_set1_epi32(0x100));
        return {gather32(kIq3sGrid, index), sign_mask64(load_le64(b.signs + 8 * p))};
    }
};

// iq1: w = 8 g + delta, g in {-1, 0, 1} from the codebook, delta = +-1; gathered as unsigned bytes
// u = 8 (g + 1) + delta + 1 = w + 9 from a copy of the codebook holding u for either delta
// (32 KiB): index bit 11 set for delta = +1.
constexpr std::array<uint64_t, 2 * std::size(kIq1sGrid)> iq1_grid_unsigned() {
    std::array<uint64_t, 2 * std::size(kIq1sGrid)> out{};
    for (size_t e = 0; e < out.size(); ++e) {
        const int delta_plus_1 = e >= std::size(kIq1sGrid) ? 2 : 0;
        for (int j = 0; j < 8; ++j) {
            const int g = static_cast<int8_t>((kIq1sGrid[e % std::size(kIq1sGrid)] >> (8 * j)) & 0xFF);
            out[e] |= static_cast<uint64_t>(8 * (g + 1) + delta_plus_1) << (8 * j);
        }
    }
    return out;
}
alignas(64) constexpr std::array<uint64_t, 2 * std::size(kIq1sGrid)> kIq1sGridUnsigned = iq1_grid_unsigned();

// iq1_s: 8-bit indices with 3 more bits each from qh[u] (bits 3i..3i+2), whose bit 15 is the unit's
// delta sign. Its delta is one per unit, so it goes into the unit's offset instead of the index
// (which saves scalar bit operations on every pair): the entries come from the delta = -1 half,
// u = 8 (g + 1) = w + 8 - delta, offset 9 (delta = -1) or 7.
template <>
struct PairDecoder<BlockIQ1_S> {
    static constexpr ScaleLanes kScaleLanes = ScaleLanes::PerUnit;
    static __m256i scales(const BlockIQ1_S& b) { return SuperDecoder<BlockIQ1_S>::unit_scales(b); }
    static PairAvx512 pair(const BlockIQ1_S& b, int p) {
        const uint32_t qh = load_le32(reinterpret_cast<const uint8_t*>(b.qh + 2 * p));  // the pair's two words
        const uint64_t high = _pdep_u64(_pext_u32(qh, 0x0FFF0FFFu), 0x0707070707070707ull);
        return {gather64(kIq1sGridUnsigned.data(), index_lanes8(b.qs + 8 * p, high))};
    }
    static __m256i correction(const BlockIQ1_S& b, __m256i unit_scales) {
        const __m256i qh = _mm256_cvtepu16_epi32(_mm_loadu_si128(reinterpret_cast<const __m128i*>(b.qh)));
        const __m256i negative = _mm256_srli_epi32(qh, 15);
        const __m256i minus_offset = _mm256_sub_epi32(_mm256_set1_epi32(-7), _mm256_add_epi32(negative, negative));
        return unit_lanes_twice(_mm256_mullo_epi32(unit_scales, minus_offset));
    }
};

// iq1_m: a 4-bit qh nibble per entry: 3 index bits, then the delta's sign (set: -1).
template <>
struct PairDecoder<BlockIQ1_M> {
    static constexpr ScaleLanes kScaleLanes = ScaleLanes::PerGroup;
    static PairAvx512 pair(const BlockIQ1_M& b, int p) {
        const uint32_t nibbles = load_le32(b.qh + 4 * p) ^ 0x88888888u;  // bit 3: delta = +1
        const uint64_t high = _pdep_u64(nibbles, 0x0F0F0F0F0F0F0F0Full);
        return {gather64(kIq1sGridUnsigned.data(), index_lanes8(b.qs + 8 * p, high))};
    }
    static __m256i correction(const BlockIQ1_M&, __m256i scales) { return _mm256_mullo_epi16(scales, _mm256_set1_epi16(-9)); }
    static __m256i scales(const BlockIQ1_M& b) { return SuperDecoder<BlockIQ1_M>::scales(b); }
};

// tq1_0 (see SuperDecoder<BlockTQ1_0>): 64 base-3 digits u = w + 1 at once. Digit j of a byte x is
// the top bits of 3 (x 3^j mod 256), i.e. of 3 m with m = x 3^j mod 256. Per 16-bit lane holding
// bytes x0 (low) and x1 (high), with no unpacking:
//   - x0: the low 16 bits of lane * (3^j << 8) are m0 << 8 (x1's term overflows away), and the
//     high half of (m0 << 8) * 3 is digit 0..2;
//   - x1: the low 16 bits of (lane & 0xFF00) * 3^j are m1 << 8, and the high half of
//     (m1 << 8) * (3 << 8) is 3 m1, whose high byte is the digit, in place.
// kTq1Powers[p]: 3^j for the bytes of each 16-bit lane of pair p (the same j for both).
alignas(64) constexpr int16_t kTq1Powers[kPairs][32] = {
    {1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 3, 3, 3, 3, 3, 3, 3, 3, 3, 3, 3, 3, 3, 3, 3, 3},
    {9, 9, 9, 9, 9, 9, 9, 9, 9, 9, 9, 9, 9, 9, 9, 9, 27, 27, 27, 27, 27, 27, 27, 27, 27, 27, 27, 27, 27, 27, 27, 27},
    {81, 81, 81, 81, 81, 81, 81, 81, 81, 81, 81, 81, 81, 81, 81, 81, 1, 1, 1, 1, 1, 1, 1, 1, 3, 3, 3, 3, 3, 3, 3, 3},
    {9, 9, 9, 9, 9, 9, 9, 9, 27, 27, 27, 27, 27, 27, 27, 27, 81, 81, 81, 81, 81, 81, 81, 81, 1, 1, 3, 3, 9, 9, 27, 27}};

__m512i ternary_digits512(__m512i bytes, int p) {
    const __m512i pow = _mm512_load_si512(kTq1Powers[p]);
    const __m512i low = _mm512_mulhi_epu16(_mm512_mullo_epi16(bytes, _mm512_slli_epi16(pow, 8)), _mm512_set1_epi16(3));
    const __m512i high_byte = _mm512_and_si512(bytes, _mm512_set1_epi16(static_cast<int16_t>(0xFF00)));
    const __m512i high = _mm512_mulhi_epu16(_mm512_mullo_epi16(high_byte, pow), _mm512_set1_epi16(0x300));
    return _mm512_ternarylogic_epi32(low, high, _mm512_set1_epi16(static_cast<int16_t>(0xFF00)), 0xF8);  // low | (high & 0xFF00)
}

template <>
struct PairDecoder<BlockTQ1_0> {
    static constexpr ScaleLanes kScaleLanes = ScaleLanes::None;
    static __m256i scales(const BlockTQ1_0&) { return _mm256_setzero_si256(); }
    static __m256i correction(const BlockTQ1_0&, __m256i) { return _mm256_set1_epi16(-1); }
    // Units 0..4: digit u of qs[0..31]; 5 and 6: digits 2 (u - 5) and 2 (u - 5) + 1 of qs[32..47],
    // one per 128-bit half; 7: digit 4 of qs[32..47], then qh's four digits of its four bytes.
    static PairAvx512 pair(const BlockTQ1_0& b, int p) {
        const __m256i head = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(b.qs));
        const __m256i tail_twice = _mm256_broadcastsi128_si256(_mm_loadu_si128(reinterpret_cast<const __m128i*>(b.qs + 32)));
        switch (p) {
            case 0:
            case 1: return {ternary_digits512(concat(head, head), p)};
            case 2: return {ternary_digits512(concat(head, tail_twice), p)};
            default: {
                const __m256i last = _mm256_mask_set1_epi32(tail_twice, 0xF0, static_cast<int>(load_u32_le(b.qh)));
                return {ternary_digits512(concat(tail_twice, last), p)};
            }
        }
    }
};

// The scale of each 16-bit lane of pair p's pair sums: lane k sums values 2k and 2k + 1 of the
// pair's 64, in group 4p + k / 8 and unit 2p + k / 16; its scale is 16-bit lane 4p + k / 8
// (PerGroup) or 2 (2p + k / 16) (PerUnit) of `scales` (only lanes 0..15 are read).
template <ScaleLanes kLanes>
__m512i pair_scales(__m512i scales, int p) {
    alignas(64) static constexpr auto kLaneOfScale = [] {
        std::array<std::array<int16_t, 32>, kPairs> lane_of{};
        for (int pair = 0; pair < kPairs; ++pair) {
            for (int k = 0; k < 32; ++k) {
                lane_of[pair][k] = static_cast<int16_t>(kLanes == ScaleLanes::PerGroup ? 4 * pair + k / 8 : 2 * (2 * pair + k / 16));
            }
        }
        return lane_of;
    }();
    return _mm512_permutexvar_epi16(_mm512_load_si512(kLaneOfScale[p].data()), scales);
}

// The formats decoded as w + offset (the others as |w| with a sign mask).
template <typename Block>
constexpr bool kOffsetFormat = requires(const Block& b, __m256i s) { PairDecoder<Block>::correction(b, s); };

template <typename Block, int kCols>
void dot_pairs_cols(int64_t n, const Block* w, const std::byte* act, size_t act_stride, float* out) {
    using Decoder = PairDecoder<Block>;
    const BlockQ8_K* column[kCols];
    for (int c = 0; c < kCols; ++c) column[c] = reinterpret_cast<const BlockQ8_K*>(act + act_stride * static_cast<size_t>(c));
    const __m512i zero = _mm512_setzero_si512();
    __m512 acc[kCols];
    for (int c = 0; c < kCols; ++c) acc[c] = _mm512_setzero_ps();
    constexpr ScaleLanes kLanes = Decoder::kScaleLanes;
    for (int64_t b = 0; b < n / kQKK; ++b) {
        prefetch_weight_stream(w + b);
        const __m256i scales = Decoder::scales(w[b]);
        // Lanes 16..31 undefined: pair_scales reads lanes 0..15, and the correction's meet zeros.
        const __m512i scales512 = _mm512_castsi256_si512(scales);
        __m512i correction_weights = zero;  // -offset_g * scale_g
        if constexpr (kOffsetFormat<Block>) correction_weights = _mm512_castsi256_si512(Decoder::correction(w[b], scales));
        __m512i isum[kCols];
        for (int c = 0; c < kCols; ++c) isum[c] = zero;
        for (int p = 0; p < kPairs; ++p) {
            const PairAvx512 q = Decoder::pair(w[b], p);
            const __m512i s = kLanes == ScaleLanes::None ? zero : pair_scales<kLanes>(scales512, p);
            for (int c = 0; c < kCols; ++c) {
                __m512i a = _mm512_loadu_si512(column[c][b].qs + 64 * p);
                if constexpr (!kOffsetFormat<Block>) a = _mm512_mask_sub_epi8(a, q.negative, zero, a);
                if constexpr (kLanes == ScaleLanes::None) {  // no scales below the block's: straight into vpdpbusd
                    isum[c] = _mm512_dpbusd_epi32(isum[c], q.magnitudes, a);
                } else {
                    isum[c] = _mm512_dpwssd_epi32(isum[c], _mm512_maddubs_epi16(q.magnitudes, a), s);
                }
            }
        }
        const float scale = SuperDecoder<Block>::scale(w[b]);
        for (int c = 0; c < kCols; ++c) {
            if constexpr (kOffsetFormat<Block>) {  // less offset_g * scale_g * sum(a) per group g (16 sums, zeros above)
                const __m512i bsums = _mm512_maskz_loadu_epi16(0xFFFF, column[c][b].bsums);
                isum[c] = _mm512_dpwssd_epi32(isum[c], correction_weights, bsums);
            }
            const __m512 dots = _mm512_mask_cvtepi32_ps(_mm512_setzero_ps(), 0xFFFF, isum[c]);
            acc[c] = _mm512_fmadd_ps(dots, _mm512_set1_ps(scale * column[c][b].d), acc[c]);
        }
    }
    for (int c = 0; c < kCols; ++c) out[c] = hsum16(acc[c]);
}

template <typename Block>
void dot_pairs(int64_t n, const void* weights, const void* act, size_t act_stride, int ncols, float* out) {
    const auto* w = static_cast<const Block*>(weights);
    const auto* a = static_cast<const std::byte*>(act);
    with_column_count(ncols, [&]<int kCols>() { dot_pairs_cols<Block, kCols>(n, w, a, act_stride, out); });
}

// q4_K at 512 bits: each 32-byte load of nibbles (sub-blocks 2p and 2p + 1) becomes one register of
// 64 values, the low nibbles in the low half and the high ones in the high half (one variable
// shift: 0 there, 4 here), which meets the 64 activations of both sub-blocks in one load, one
// maddubs and one madd by the two sub-blocks' scales (spread by one shuffle of the scales broadcast
// to every 128-bit lane). Half the vector instructions of the AVX2 dot's four steps; the block's
// scales, mins and minimum term are the AVX2 dot's. A one-token q4_K product is bound by these
// instructions on Zen 4 (27 GB/s from L3 on two cores with the AVX2 dot, where memory gives 29-40).
struct Q4KDot512 {
    template <int NC>
    static void run(int64_t n, const void* wv, const std::byte* act, size_t stride, float* out) {
        const auto* w = static_cast<const BlockQ4_K*>(wv);
        // Masked forms with an explicit source throughout: the plain ones trip gcc 12's
        // -Wuninitialized inside its own headers.
        const __m512i zero = _mm512_setzero_si512();
        const __m512i low4 = _mm512_set1_epi8(0x0F);
        const __m512i nibble_shift = _mm512_mask_inserti64x4(zero, 0xff, zero, _mm256_set1_epi16(4), 1);
        __m512i scale_index[4];  // words 2p (low half) and 2p + 1 (high half) of each 128-bit lane
        for (int p = 0; p < 4; ++p) {
            const __m512i low = _mm512_mask_inserti64x4(zero, 0xff, zero, _mm256_set1_epi16(static_cast<int16_t>(0x0100 * (4 * p + 1) + 4 * p)), 0);
            scale_index[p] = _mm512_mask_inserti64x4(zero, 0xff, low, _mm256_set1_epi16(static_cast<int16_t>(0x0100 * (4 * p + 3) + 4 * p + 2)), 1);
        }
        // Each sub-block's min twice (words 2s and 2s + 1): one madd with the activations' 16-sums
        // gives min_s * (bsums[2s] + bsums[2s + 1]) in int32 lane s.
        const __m256i min_twice = _mm256_setr_epi16(0, 0, 1, 1, 2, 2, 3, 3, 4, 4, 5, 5, 6, 6, 7, 7);
        __m512 acc[NC];
        __m256 acc_min[NC];
        for (int j = 0; j < NC; ++j) {
            acc[j] = _mm512_setzero_ps();
            acc_min[j] = _mm256_setzero_ps();
        }
        for (int64_t b = 0; b < n / kQKK; ++b) {
            prefetch_weight_stream(w + b);
            __m128i scales16, mins16;
            k_scales_mins(w[b].scales, scales16, mins16);
            const __m256i mins_pairs = _mm256_maskz_permutexvar_epi16(0xFFFF, min_twice, _mm256_castsi128_si256(mins16));
            // d and dmin, adjacent f16 values, converted together.
            const __m128 d_dmin = _mm_cvtph_ps(_mm_cvtsi32_si128(static_cast<int>(load_le32(reinterpret_cast<const uint8_t*>(&w[b].d)))));
            const __m512i scales_all = _mm512_mask_broadcast_i32x4(zero, 0xffff, scales16);
            __m512i scaled[NC];
            for (int j = 0; j < NC; ++j) scaled[j] = _mm512_setzero_si512();
            for (int p = 0; p < 4; ++p) {
                const __m512i raw = _mm512_mask_broadcast_i64x4(zero, 0xff, load32(w[b].qs + 32 * p));
                const __m512i q = _mm512_and_si512(_mm512_srlv_epi16(raw, nibble_shift), low4);
                const __m512i scale = _mm512_shuffle_epi8(scales_all, scale_index[p]);
                for (int j = 0; j < NC; ++j) {
                    const int8_t* qa = reinterpret_cast<const BlockQ8_K*>(act + stride * j)[b].qs + 64 * p;
                    const __m512i pairs = _mm512_maddubs_epi16(q, _mm512_loadu_si512(qa));
                    scaled[j] = _mm512_dpwssd_epi32(scaled[j], pairs, scale);  // += pairs * scale, summed by twos
                }
            }
            for (int j = 0; j < NC; ++j) {
                const BlockQ8_K& a = reinterpret_cast<const BlockQ8_K*>(act + stride * j)[b];
                const __m128 scaled_d = _mm_mul_ps(d_dmin, _mm_set1_ps(a.d));  // d * a.d, dmin * a.d
                acc[j] = _mm512_fmadd_ps(_mm512_mask_broadcastss_ps(_mm512_setzero_ps(), kAll16, scaled_d), _mm512_mask_cvtepi32_ps(_mm512_setzero_ps(), 0xffff, scaled[j]), acc[j]);
                const __m256i min_terms = _mm256_madd_epi16(mins_pairs, load32(a.bsums));
                acc_min[j] = _mm256_fmadd_ps(_mm256_broadcastss_ps(_mm_movehdup_ps(scaled_d)), _mm256_cvtepi32_ps(min_terms), acc_min[j]);
            }
        }
        for (int j = 0; j < NC; ++j) out[j] = hsum(_mm256_sub_ps(add_halves(acc[j]), acc_min[j]));
    }
};

// 8 repacked q4_K rows at once (core/q4k_x8.hpp): per 128 values of the 8 rows (a 64-byte chunk)
// one load and three operations split the nibbles, and one 64-bit broadcast of 8 activations serves
// every row with no shuffle (vpdpbusd's int32 lane 2r takes bytes 0-3 of row r's 8, lane 2r + 1
// bytes 4-7); each sub-block's lane sums times the rows' scales (each twice) by one vpmulld; the
// mins by the activations' 16-sums once per super-block. 1.6-2x the per-row dot's rate in L2 on
// Zen 4 (results/cpu/vs-llama-cpp-2026-12-07-zen4-night.md).
void dot_q4_K_x8(int64_t n, const BlockQ4_Kx8* groups, const BlockQ8_K* activations, float* out) {
    const __m512i zero = _mm512_setzero_si512();
    const __m512i low4 = _mm512_set1_epi8(0x0F);
    __m256 acc = _mm256_setzero_ps();
    for (int64_t b = 0; b < n / kQKK; ++b) {
        const BlockQ4_Kx8& g = groups[b];
        const BlockQ8_K& a = activations[b];
        prefetch_weight_stream(&g);
        __m512i sums = zero;
        for (int s = 0; s < 8; ++s) {
            __m512i sub = zero;
#pragma GCC unroll 2
            for (int c = 2 * s; c < 2 * s + 2; ++c) {
                const __m512i raw = _mm512_loadu_si512(g.qs[c]);
                const __m512i lo = _mm512_and_si512(raw, low4);
                const __m512i hi = _mm512_and_si512(_mm512_maskz_srli_epi16(~__mmask32{0}, raw, 4), low4);
                long long first8 = 0;
                long long next8 = 0;
                std::memcpy(&first8, a.qs + 16 * c, sizeof first8);
                std::memcpy(&next8, a.qs + 16 * c + 8, sizeof next8);
                sub = _mm512_dpbusd_epi32(sub, lo, _mm512_set1_epi64(first8));
                sub = _mm512_dpbusd_epi32(sub, hi, _mm512_set1_epi64(next8));
            }
            const __m128i scales8 = _mm_cvtsi64_si128(static_cast<long long>(q4_K_x8_scales(g, s)));
            const __m512i scales = _mm512_maskz_cvtepu8_epi32(kAll16, _mm_unpacklo_epi8(scales8, scales8));
            sums = _mm512_add_epi32(sums, _mm512_maskz_mullo_epi32(kAll16, sub, scales));
        }
        // Row r's two lanes (2r, 2r + 1) added in the low half of each 64-bit lane, then narrowed.
        const __m256i rows = _mm512_maskz_cvtepi64_epi32(kAll8, _mm512_add_epi32(sums, _mm512_maskz_srli_epi64(kAll8, sums, 32)));
        __m256i mins = _mm256_setzero_si256();
        for (int s = 0; s < 8; ++s) {
            const __m256i row_mins = _mm256_cvtepu8_epi32(_mm_cvtsi64_si128(static_cast<long long>(q4_K_x8_mins(g, s))));
            mins = _mm256_add_epi32(mins, _mm256_mullo_epi32(row_mins, _mm256_set1_epi32(a.bsums[2 * s] + a.bsums[2 * s + 1])));
        }
        const __m256 scale = _mm256_set1_ps(a.d);
        const __m256 d = _mm256_mul_ps(_mm256_cvtph_ps(_mm_loadu_si128(reinterpret_cast<const __m128i*>(g.d))), scale);
        const __m256 dmin = _mm256_mul_ps(_mm256_cvtph_ps(_mm_loadu_si128(reinterpret_cast<const __m128i*>(g.dmin))), scale);
        acc = _mm256_fmadd_ps(_mm256_cvtepi32_ps(rows), d, acc);
        acc = _mm256_fnmadd_ps(_mm256_cvtepi32_ps(mins), dmin, acc);
    }
    _mm256_storeu_ps(out, acc);
}

QuantDot make_table() {
    QuantDot t = quant_dot_avx2();
    t.dot_q4_K_x8 = dot_q4_K_x8;
    t.isa = Isa::Avx512;
    set_core_dots(t);  // this file's copies, built with AVX-512's registers
    t.dot[static_cast<int>(DType::Q4_K)] = dot_columns<Q4KDot512>;
    for (int type = 0; type < kDTypeCount; ++type) {
        with_block_type(
            static_cast<DType>(type),
            [&]<typename Block>(BlockTag<Block>) {
                if constexpr (requires(const Block& b, int p) { PairDecoder<Block>::pair(b, p); }) t.dot[type] = dot_pairs<Block>;
                return true;
            },
            false);
    }
    return t;
}

}  // namespace

const QuantDot& quant_dot_avx512() {
    static const QuantDot table = make_table();
    return table;
}

}  // namespace xb::cpu_kernels
