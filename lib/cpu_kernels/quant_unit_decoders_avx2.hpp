// The AVX2 decoders of the block formats into signed bytes in a register: the legacy formats' 32
// values (Q4_0Format .. Q8_0Format), the q4_K/q5_K scales and mins, and the newer formats' 32-value
// units (q2_K, q3_K, the IQ family, TQ, MXFP4, NVFP4): codebook indices built in vector lanes and
// their entries gathered (vpgather), signs expanded from bits to byte masks, 4-bit indices looked up
// with pshufb, bit planes shifted out. For the translation units compiled with AVX2 (or more) only:
// the row dot products (quant_dot_avx2.cpp, quant_dot_units_avx2.cpp) and both tile tables
// (quant_tile_decoders_avx2.hpp). Everything is in an unnamed namespace, so that each of them has its
// own copy, built for its own instruction set.
//
//   - SuperDecoder<Block> (the 256-value formats): scale(b), the float every value of the block is
//     scaled by; scales(b), the integer scale of each group of 16 values as sixteen 16-bit lanes
//     (and, for the formats that scale per unit of 32, unit_scales(b): unit u's in 32-bit lane u);
//     unit(b, u), unit u's 32 values. q2_K's minima are its own (the high nibbles of b.scales).
//   - DecoderAvx2<Block> (iq4_nl, mxfp4, nvfp4): decode(b, u), unit u's values and the float scales
//     of its two halves.
// The values are decode_unit's exactly (tests/core/test_quant.cpp checks every table against the
// dot of the dequantized operands).
#pragma once

#include <immintrin.h>

#include <cstddef>
#include <cstdint>
#include <cstring>

#include "core/quant_block_types.hpp"

namespace xb::cpu_kernels {

namespace {

// --- the legacy formats and the k-quants' packed scales ---------------------------------------------

// f16 scales through F16C: the portable f16_to_f32 branches, once per block and column here.
float fp16(uint16_t h) { return _cvtsh_ss(h); }

// A little-endian 32-bit load (x86 is little-endian).
inline uint32_t load_le32(const uint8_t* p) {
    uint32_t v;
    std::memcpy(&v, p, sizeof v);
    return v;
}
inline uint64_t load_le64(const uint8_t* p) {
    uint64_t v;
    std::memcpy(&v, p, sizeof v);
    return v;
}
inline __m256i load32(const void* p) { return _mm256_loadu_si256(static_cast<const __m256i*>(p)); }

// The 32 nibbles of 16 bytes as bytes: low nibbles first (elements 0..15), then the high ones.
inline __m256i nibbles(const uint8_t* qs) {
    const __m128i v = _mm_loadu_si128(reinterpret_cast<const __m128i*>(qs));
    const __m128i mask = _mm_set1_epi8(0x0F);
    return _mm256_set_m128i(_mm_and_si128(_mm_srli_epi16(v, 4), mask), _mm_and_si128(v, mask));
}

// --- shared pieces ------------------------------------------------------------------------------------

// Four sign bytes (byte g: the signs of values 8g .. 8g + 7) as a mask of 32 bytes, 0xFF where
// the value is negative.
__m256i sign_mask(uint32_t signs) {
    const __m256i spread = _mm256_shuffle_epi8(
        _mm256_set1_epi32(static_cast<int>(signs)),
        _mm256_set_epi64x(0x0303030303030303, 0x0202020202020202, 0x0101010101010101, 0x0000000000000000));
    const __m256i bits = _mm256_set1_epi64x(static_cast<int64_t>(0x8040201008040201ull));
    return _mm256_cmpeq_epi8(_mm256_and_si256(spread, bits), bits);
}
__m256i apply_signs(__m256i v, uint32_t signs) {
    const __m256i m = sign_mask(signs);
    return _mm256_sub_epi8(_mm256_xor_si256(v, m), m);
}
// Four 7-bit sign indices, one per 32-bit lane, as their four sign bytes (iq_sign_byte: the index
// with its parity as bit 7) packed in a word, lane 0 lowest.
uint32_t sign_bytes(__m128i index7) {
    __m128i parity = _mm_xor_si128(index7, _mm_srli_epi32(index7, 4));
    parity = _mm_xor_si128(parity, _mm_srli_epi32(parity, 2));
    parity = _mm_xor_si128(parity, _mm_srli_epi32(parity, 1));
    const __m128i bytes = _mm_or_si128(index7, _mm_slli_epi32(_mm_and_si128(parity, _mm_set1_epi32(1)), 7));
    return static_cast<uint32_t>(_mm_cvtsi128_si32(_mm_shuffle_epi8(bytes, _mm_setr_epi8(0, 4, 8, 12, -1, -1, -1, -1, -1, -1, -1, -1, -1, -1, -1, -1))));
}
// Four 7-bit sign indices packed in a word (bits 7g .. 7g + 6), as four sign bytes.
uint32_t sign_bytes(uint32_t aux) {
    const __m128i lanes = _mm_srlv_epi32(_mm_set1_epi32(static_cast<int>(aux)), _mm_setr_epi32(0, 7, 14, 21));
    return sign_bytes(_mm_and_si128(lanes, _mm_set1_epi32(127)));
}
// The codebook entries at four (64-bit entries) or eight (32-bit) indices in 32-bit lanes, by one
// gather: assembling them in scalar code, an insert per entry, cost more than the products they feed.
__m256i entries64(const uint64_t* grid, __m128i index) {
    return _mm256_i32gather_epi64(reinterpret_cast<const long long*>(grid), index, 8);
}
__m256i entries32(const uint32_t* grid, __m256i index) {
    return _mm256_i32gather_epi32(reinterpret_cast<const int*>(grid), index, 4);
}
// Four (eight) bytes from p, one per 32-bit lane.
__m128i byte_lanes4(const uint8_t* p) { return _mm_cvtepu8_epi32(_mm_cvtsi32_si128(static_cast<int>(load_le32(p)))); }
__m256i byte_lanes8(const uint8_t* p) { return _mm256_cvtepu8_epi32(_mm_loadl_epi64(reinterpret_cast<const __m128i*>(p))); }
// Field i of `bits` in lane i, for fields `width` bits apart: (bits >> width * i) & mask.
__m128i field_lanes4(uint32_t bits, int width, int mask) {
    const __m128i shifts = _mm_setr_epi32(0, width, 2 * width, 3 * width);
    return _mm_and_si128(_mm_srlv_epi32(_mm_set1_epi32(static_cast<int>(bits)), shifts), _mm_set1_epi32(mask));
}

// 16 bytes of nibbles through a 16-entry signed table: values 0..15 from the low nibbles, 16..31
// from the high ones, as iq4_nl, iq4_xs and mxfp4 store them.
__m128i nibble_table(uint64_t lo, uint64_t hi) {
    return _mm_set_epi64x(static_cast<int64_t>(hi), static_cast<int64_t>(lo));
}
void nibble_lookup(const uint8_t* qs, __m128i table, __m128i& lo, __m128i& hi) {
    const __m128i bytes = _mm_loadu_si128(reinterpret_cast<const __m128i*>(qs));
    const __m128i mask = _mm_set1_epi8(0x0F);
    lo = _mm_shuffle_epi8(table, _mm_and_si128(bytes, mask));
    hi = _mm_shuffle_epi8(table, _mm_and_si128(_mm_srli_epi16(bytes, 4), mask));
}
__m256i nibble_table_values(const uint8_t* qs, __m128i table) {
    __m128i lo, hi;
    nibble_lookup(qs, table, lo, hi);
    return _mm256_set_m128i(hi, lo);
}

// q2_K / q3_K / tq2_0: unit u's 2-bit values are bits 2s..2s+1 (s = u % 4) of the 32 bytes
// qs[32 (u / 4)..].
__m256i two_bit_values(const uint8_t* qs, int unit) {
    const __m256i bytes = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(qs + 32 * (unit / 4)));
    return _mm256_and_si256(_mm256_srl_epi16(bytes, _mm_cvtsi32_si128(2 * (unit % 4))), _mm256_set1_epi8(3));
}

// The 32 five-bit q's of a q5 block: bit j of qh is bit 4 of element j.
inline __m256i q5(const uint8_t* qs, const uint8_t* qh) {
    return _mm256_or_si256(nibbles(qs), _mm256_and_si256(sign_mask(load_le32(qh)), _mm256_set1_epi8(0x10)));
}

// A legacy block decoded once for every column it meets: w = d * q + m. Signed q's (q4_0, q5_0,
// q8_0: m = 0) meet the activations by the sign trick in the row products; unsigned ones (q4_1, q5_1) directly,
// their minimum m times the activations' block sum added apart.
struct Decoded {
    __m256i q;
    float d;
    float m;
};
struct Q4_0Format {
    using Block = BlockQ4_0;
    static constexpr bool kSigned = true;
    static Decoded decode(const Block& b) { return {_mm256_sub_epi8(nibbles(b.qs), _mm256_set1_epi8(8)), fp16(b.d), 0}; }
};
struct Q4_1Format {
    using Block = BlockQ4_1;
    static constexpr bool kSigned = false;
    static Decoded decode(const Block& b) { return {nibbles(b.qs), fp16(b.d), fp16(b.m)}; }
};
struct Q5_0Format {
    using Block = BlockQ5_0;
    static constexpr bool kSigned = true;
    static Decoded decode(const Block& b) {
        return {_mm256_sub_epi8(q5(b.qs, b.qh), _mm256_set1_epi8(16)), fp16(b.d), 0};
    }
};
struct Q5_1Format {
    using Block = BlockQ5_1;
    static constexpr bool kSigned = false;
    static Decoded decode(const Block& b) { return {q5(b.qs, b.qh), fp16(b.d), fp16(b.m)}; }
};
struct Q8_0Format {
    using Block = BlockQ8_0;
    static constexpr bool kSigned = true;
    static Decoded decode(const Block& b) { return {load32(b.qs), fp16(b.d), 0}; }
};

// The 6-bit scales and mins of a q4_K/q5_K super-block (k_scale_min's packing) as 8 x int16 each,
// by 32-bit word arithmetic instead of eight calls: sub-blocks 0-3 keep the low 6 bits of words 0
// (scales) and 1 (mins); 4-7 take word 2's nibbles with the top 2 bits of words 0 and 1 above them.
inline void k_scales_mins(const uint8_t* packed, __m128i& scales, __m128i& mins) {
    const uint32_t w0 = load_le32(packed), w1 = load_le32(packed + 4), w2 = load_le32(packed + 8);
    const uint32_t low6 = 0x3f3f3f3fu, top2 = 0xc0c0c0c0u, low4 = 0x0f0f0f0fu;
    const uint32_t sc_lo = w0 & low6, sc_hi = (w2 & low4) | ((w0 & top2) >> 2);
    const uint32_t m_lo = w1 & low6, m_hi = ((w2 >> 4) & low4) | ((w1 & top2) >> 2);
    scales = _mm_cvtepu8_epi16(_mm_set_epi32(0, 0, static_cast<int>(sc_hi), static_cast<int>(sc_lo)));
    mins = _mm_cvtepu8_epi16(_mm_set_epi32(0, 0, static_cast<int>(m_hi), static_cast<int>(m_lo)));
}

// --- the super-block formats: integer scales -----------------------------------------------------------
// SuperDecoder<Block>: scale(b), the float every value of the block is scaled by; scales(b), the
// integer scale of each group of 16 values as sixteen 16-bit lanes (decoded once per block);
// unit(b, u), the unit's 32 values.

// The eight nibbles of a word, nibble u in lane u.
__m256i nibble_lanes8(uint32_t word) {
    const __m256i shifts = _mm256_setr_epi32(0, 4, 8, 12, 16, 20, 24, 28);
    return _mm256_and_si256(_mm256_srlv_epi32(_mm256_set1_epi32(static_cast<int>(word)), shifts), _mm256_set1_epi32(15));
}
// 2 s + 1 in each 32-bit lane: the odd scales of the codebook formats.
__m256i odd_scale_lanes(__m256i s) { return _mm256_or_si256(_mm256_add_epi32(s, s), _mm256_set1_epi32(1)); }
// Eight scales in 32-bit lanes (|s| < 2^15), each as the 16-bit scale of both groups of its unit.
__m256i unit_lanes_twice(__m256i s) { return _mm256_or_si256(_mm256_and_si256(s, _mm256_set1_epi32(0xFFFF)), _mm256_slli_epi32(s, 16)); }

template <typename Block>
struct SuperDecoder;

template <>
struct SuperDecoder<BlockQ2_K> {
    static float scale(const BlockQ2_K& b) { return fp16(b.d); }
    static __m256i scales(const BlockQ2_K& b) {
        const __m128i bytes = _mm_loadu_si128(reinterpret_cast<const __m128i*>(b.scales));
        return _mm256_cvtepu8_epi16(_mm_and_si128(bytes, _mm_set1_epi8(0x0F)));
    }
    static __m256i unit(const BlockQ2_K& b, int u) { return two_bit_values(b.qs, u); }
};

template <>
struct SuperDecoder<BlockQ3_K> {
    static float scale(const BlockQ3_K& b) { return fp16(b.d); }
    // q3_K_scale's packing by 32-bit word arithmetic (sixteen calls of it cost as much as the
    // block's dots): scales 0-3 and 4-7 are the low nibbles of words 0 and 1, 8-11 and 12-15 their
    // high nibbles; bits 4-5 of scale k are bits 2 (k / 4) of byte k % 4 of word 2.
    static __m256i scales(const BlockQ3_K& b) {
        const uint32_t w0 = load_le32(b.scales), w1 = load_le32(b.scales + 4), w2 = load_le32(b.scales + 8);
        const uint32_t low4 = 0x0f0f0f0fu, low2 = 0x03030303u;
        const auto word = [&](uint32_t low, int shift) { return static_cast<int>(low | (((w2 >> shift) & low2) << 4)); };
        const __m128i bytes = _mm_set_epi32(word((w1 >> 4) & low4, 6), word((w0 >> 4) & low4, 4), word(w1 & low4, 2),
                                            word(w0 & low4, 0));
        return _mm256_cvtepi8_epi16(_mm_sub_epi8(bytes, _mm_set1_epi8(32)));
    }
    static __m256i unit(const BlockQ3_K& b, int u) {
        // Minus 4 where bit u of hmask[l] is clear.
        const __m256i hmask = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(b.hmask));
        const __m256i bit = _mm256_and_si256(_mm256_srl_epi16(hmask, _mm_cvtsi32_si128(u)), _mm256_set1_epi8(1));
        const __m256i minus4 = _mm256_andnot_si256(_mm256_slli_epi16(bit, 2), _mm256_set1_epi8(4));
        return _mm256_sub_epi8(two_bit_values(b.qs, u), minus4);
    }
};

template <>
struct SuperDecoder<BlockTQ2_0> {
    static float scale(const BlockTQ2_0& b) { return fp16(b.d); }
    static __m256i scales(const BlockTQ2_0&) { return _mm256_set1_epi16(1); }
    static __m256i unit(const BlockTQ2_0& b, int u) { return _mm256_sub_epi8(two_bit_values(b.qs, u), _mm256_set1_epi8(1)); }
};

// tq1_0: digit j of 32 base-3 bytes, minus 1: multiply by 3^j keeping the low 8 bits (the digits
// above j drop out), then the top bits of 3 times that (core/quant_blocks_small.hpp's ternary_digit).
// pow_lo / pow_hi: 3^j for each 16-bit element of the unpacked low / high bytes of each 128-bit half.
__m256i ternary_digits(__m256i bytes, __m256i pow_lo, __m256i pow_hi) {
    const __m256i zero = _mm256_setzero_si256();
    const __m256i low8 = _mm256_set1_epi16(0xFF);
    const __m256i three = _mm256_set1_epi16(3);
    __m256i lo = _mm256_and_si256(_mm256_mullo_epi16(_mm256_unpacklo_epi8(bytes, zero), pow_lo), low8);
    __m256i hi = _mm256_and_si256(_mm256_mullo_epi16(_mm256_unpackhi_epi8(bytes, zero), pow_hi), low8);
    lo = _mm256_srli_epi16(_mm256_mullo_epi16(lo, three), 8);
    hi = _mm256_srli_epi16(_mm256_mullo_epi16(hi, three), 8);
    return _mm256_sub_epi8(_mm256_packus_epi16(lo, hi), _mm256_set1_epi8(1));
}

template <>
struct SuperDecoder<BlockTQ1_0> {
    static float scale(const BlockTQ1_0& b) { return fp16(b.d); }
    static __m256i scales(const BlockTQ1_0&) { return _mm256_set1_epi16(1); }
    // Values 0..159: digit e / 32 of qs[e % 32]; 160..239: digit (e - 160) / 16 of qs[32 + e % 16];
    // 240..255: digit (e - 240) / 4 of qh[e % 4].
    static __m256i unit(const BlockTQ1_0& b, int u) {
        constexpr int16_t kPow3[5] = {1, 3, 9, 27, 81};
        if (u < 5) {
            const __m256i pow = _mm256_set1_epi16(kPow3[u]);
            return ternary_digits(_mm256_loadu_si256(reinterpret_cast<const __m256i*>(b.qs)), pow, pow);
        }
        const __m128i tail = _mm_loadu_si128(reinterpret_cast<const __m128i*>(b.qs + 32));
        if (u < 7) {  // digits 2 (u - 5) and 2 (u - 5) + 1 of qs[32..47], one per half
            const __m256i pow = _mm256_set_m128i(_mm_set1_epi16(kPow3[2 * (u - 5) + 1]), _mm_set1_epi16(kPow3[2 * (u - 5)]));
            return ternary_digits(_mm256_broadcastsi128_si256(tail), pow, pow);
        }
        // Digit 4 of qs[32..47], then qh's four digits of four bytes.
        const __m256i bytes = _mm256_set_m128i(_mm_set1_epi32(static_cast<int>(load_u32_le(b.qh))), tail);
        const __m256i pow_lo = _mm256_set_m128i(_mm_set_epi16(3, 3, 3, 3, 1, 1, 1, 1), _mm_set1_epi16(81));
        const __m256i pow_hi = _mm256_set_m128i(_mm_set_epi16(27, 27, 27, 27, 9, 9, 9, 9), _mm_set1_epi16(81));
        return ternary_digits(bytes, pow_lo, pow_hi);
    }
};

template <>
struct SuperDecoder<BlockIQ4_XS> {
    static float scale(const BlockIQ4_XS& b) { return fp16(b.d); }
    // iq4xs_scale of the eight units in vector lanes (eight scalar calls cost as much as decoding
    // the block's values): nibble u of scales_l under bits 2u, 2u + 1 of scales_h, less 32.
    static __m256i scales(const BlockIQ4_XS& b) {
        const __m256i high = _mm256_srlv_epi32(_mm256_set1_epi32(b.scales_h), _mm256_setr_epi32(0, 2, 4, 6, 8, 10, 12, 14));
        const __m256i s = _mm256_or_si256(nibble_lanes8(load_le32(b.scales_l)), _mm256_slli_epi32(_mm256_and_si256(high, _mm256_set1_epi32(3)), 4));
        return unit_lanes_twice(_mm256_sub_epi32(s, _mm256_set1_epi32(32)));
    }
    static __m256i unit(const BlockIQ4_XS& b, int u) {
        return nibble_table_values(b.qs + 16 * u, nibble_table(kIq4ValuesLo, kIq4ValuesHi));
    }
};

// --- the 4-bit table formats of 32 and 64 values: float scales per unit ------------------------------------

// A unit's 32 signed weight bytes in a register, with the float scales of its two halves.
struct UnitAvx2 {
    __m256i q;
    float scale[2];
};

template <typename Block>
struct DecoderAvx2;

template <>
struct DecoderAvx2<BlockIQ4_NL> {
    static UnitAvx2 decode(const BlockIQ4_NL& b, int /*unit*/) {
        const float d = fp16(b.d);
        return {nibble_table_values(b.qs, nibble_table(kIq4ValuesLo, kIq4ValuesHi)), {d, d}};
    }
};

template <>
struct DecoderAvx2<BlockMXFP4> {
    static UnitAvx2 decode(const BlockMXFP4& b, int /*unit*/) {
        const float d = e8m0_half(b.e);
        return {nibble_table_values(b.qs, nibble_table(kFp4ValuesLo, kFp4ValuesHi)), {d, d}};
    }
};

// nvfp4: unit u is groups 2u and 2u + 1, whose values 0..7 are the low nibbles and 8..15 the high
// ones of their 8 bytes.
template <>
struct DecoderAvx2<BlockNVFP4> {
    static UnitAvx2 decode(const BlockNVFP4& b, int unit) {
        __m128i lo, hi;
        nibble_lookup(b.qs + 16 * unit, nibble_table(kFp4ValuesLo, kFp4ValuesHi), lo, hi);
        const __m256i q = _mm256_set_m128i(_mm_unpackhi_epi64(lo, hi), _mm_unpacklo_epi64(lo, hi));
        return {q, {kUe4m3HalfTable[b.d[2 * unit]], kUe4m3HalfTable[b.d[2 * unit + 1]]}};
    }
};

// --- the codebook formats: integer scales ------------------------------------------------------------

template <>
struct SuperDecoder<BlockIQ2_XXS> {
    static float scale(const BlockIQ2_XXS& b) { return fp16(b.d) * 0.125f; }  // (0.5 + s) / 4 = (2s + 1) / 8
    // The top nibbles of the eight iq2xxs_aux words (the odd words of qs), in vector lanes.
    static __m256i unit_scales(const BlockIQ2_XXS& b) {
        const __m256 lo = _mm256_castsi256_ps(load32(b.qs)), hi = _mm256_castsi256_ps(load32(b.qs + 32));
        // Per 128-bit half: the odd words of lo's then hi's half (units 0, 1, 4, 5 | 2, 3, 6, 7).
        const __m256i odd = _mm256_castps_si256(_mm256_shuffle_ps(lo, hi, _MM_SHUFFLE(3, 1, 3, 1)));
        const __m256i aux = _mm256_permute4x64_epi64(odd, _MM_SHUFFLE(3, 1, 2, 0));
        return odd_scale_lanes(_mm256_srli_epi32(aux, 28));
    }
    static __m256i scales(const BlockIQ2_XXS& b) { return unit_lanes_twice(unit_scales(b)); }
    static __m256i unit(const BlockIQ2_XXS& b, int u) {
        const __m256i v = entries64(kIq2xxsGrid, byte_lanes4(b.qs + 8 * u));
        return apply_signs(v, sign_bytes(iq2xxs_aux(b, u)));
    }
};

// iq2_xs / iq2_s: 2s + 1 for the sixteen 4-bit scales (group 2u low nibble, 2u + 1 high).
__m256i iq2_nibble_scales(const uint8_t* scales) {
    const __m128i bytes = _mm_loadl_epi64(reinterpret_cast<const __m128i*>(scales));
    const __m128i mask = _mm_set1_epi8(0x0F);
    const __m128i nibbles = _mm_unpacklo_epi8(_mm_and_si128(bytes, mask), _mm_and_si128(_mm_srli_epi16(bytes, 4), mask));
    const __m256i s = _mm256_cvtepu8_epi16(nibbles);
    return _mm256_add_epi16(_mm256_add_epi16(s, s), _mm256_set1_epi16(1));
}

template <>
struct SuperDecoder<BlockIQ2_XS> {
    static float scale(const BlockIQ2_XS& b) { return fp16(b.d) * 0.125f; }
    static __m256i scales(const BlockIQ2_XS& b) { return iq2_nibble_scales(b.scales); }
    static __m256i unit(const BlockIQ2_XS& b, int u) {
        // Four 16-bit words: a 9-bit index under a 7-bit sign index.
        const __m128i words = _mm_cvtepu16_epi32(_mm_loadl_epi64(reinterpret_cast<const __m128i*>(b.qs + 8 * u)));
        const __m256i v = entries64(kIq2xsGrid, _mm_and_si128(words, _mm_set1_epi32(511)));
        return apply_signs(v, sign_bytes(_mm_srli_epi32(words, 9)));
    }
};

template <>
struct SuperDecoder<BlockIQ2_S> {
    static float scale(const BlockIQ2_S& b) { return fp16(b.d) * 0.125f; }
    static __m256i scales(const BlockIQ2_S& b) { return iq2_nibble_scales(b.scales); }
    static __m256i unit(const BlockIQ2_S& b, int u) {
        // iq2s_index: qs byte i with bits 2i, 2i + 1 of qh[u] above it.
        const __m128i index = _mm_or_si128(byte_lanes4(b.qs + 4 * u), _mm_slli_epi32(field_lanes4(b.qh[u], 2, 3), 8));
        return apply_signs(entries64(kIq2sGrid, index), load_u32_le(b.signs + 4 * u));
    }
};

template <>
struct SuperDecoder<BlockIQ3_XXS> {
    static float scale(const BlockIQ3_XXS& b) { return fp16(b.d) * 0.25f; }  // (0.5 + s) / 2 = (2s + 1) / 4
    static __m256i unit_scales(const BlockIQ3_XXS& b) {  // the top nibbles of the eight iq3xxs_aux words
        return odd_scale_lanes(_mm256_srli_epi32(load32(b.qs + kQKK / 4), 28));
    }
    static __m256i scales(const BlockIQ3_XXS& b) { return unit_lanes_twice(unit_scales(b)); }
    static __m256i unit(const BlockIQ3_XXS& b, int u) {
        const __m256i v = entries32(kIq3xxsGrid, byte_lanes8(b.qs + 8 * u));
        return apply_signs(v, sign_bytes(iq3xxs_aux(b, u)));
    }
};

template <>
struct SuperDecoder<BlockIQ3_S> {
    static float scale(const BlockIQ3_S& b) { return fp16(b.d); }
    static __m256i unit_scales(const BlockIQ3_S& b) { return odd_scale_lanes(nibble_lanes8(load_le32(b.scales))); }
    static __m256i scales(const BlockIQ3_S& b) { return unit_lanes_twice(unit_scales(b)); }
    // The eight 9-bit indices of iq3s_index, in vector lanes.
    static __m256i unit(const BlockIQ3_S& b, int u) {
        // Bit j of qh[u] to bit 8 of lane j.
        const __m256i high = _mm256_and_si256(_mm256_sllv_epi32(_mm256_set1_epi32(b.qh[u]), _mm256_set_epi32(1, 2, 3, 4, 5, 6, 7, 8)),
                                              _mm256_set1_epi32(0x100));
        const __m256i v = entries32(kIq3sGrid, _mm256_or_si256(byte_lanes8(b.qs + 8 * u), high));
        return apply_signs(v, load_u32_le(b.signs + 4 * u));
    }
};

// iq1: q = 8 grid +- 1 (delta folded in), the scale divided by 8 (core/quant_blocks_iq.hpp).
__m256i times8(__m256i v) {
    const __m256i v2 = _mm256_add_epi8(v, v);
    const __m256i v4 = _mm256_add_epi8(v2, v2);
    return _mm256_add_epi8(v4, v4);
}
int64_t delta_bytes(bool negative) { return negative ? -1 : 0x0101010101010101; }

template <>
struct SuperDecoder<BlockIQ1_S> {
    static float scale(const BlockIQ1_S& b) { return fp16(b.d) * kIq1Delta; }
    static __m256i unit_scales(const BlockIQ1_S& b) {  // bits 12-14 of each qh word
        const __m256i qh = _mm256_cvtepu16_epi32(_mm_loadu_si128(reinterpret_cast<const __m128i*>(b.qh)));
        return odd_scale_lanes(_mm256_and_si256(_mm256_srli_epi32(qh, 12), _mm256_set1_epi32(7)));
    }
    static __m256i scales(const BlockIQ1_S& b) { return unit_lanes_twice(unit_scales(b)); }
    static __m256i unit(const BlockIQ1_S& b, int u) {
        // iq1_entry's 11-bit indices: qs byte i with bits 3i .. 3i + 2 of qh[u] above it.
        const __m128i index = _mm_or_si128(byte_lanes4(b.qs + 4 * u), _mm_slli_epi32(field_lanes4(b.qh[u], 3, 7), 8));
        const __m256i v = entries64(kIq1sGrid, index);
        return _mm256_add_epi8(times8(v), _mm256_set1_epi64x(delta_bytes(iq1_negative_delta(b, u, 0))));
    }
};

template <>
struct SuperDecoder<BlockIQ1_M> {
    static float scale(const BlockIQ1_M& b) { return iq1_m_d(b) * kIq1Delta; }
    // 2 s + 1 for the sixteen 3-bit scales (iq1m_scale_field): scale k sits at bits 3 (k % 4) of
    // scale word k / 4. AVX2 has no per-lane 16-bit shift, so each lane's word is multiplied by the
    // power of two that lifts its field to the top three bits, then shifted down by 13.
    static __m256i scales(const BlockIQ1_M& b) {
        const __m256i words = _mm256_set1_epi64x(static_cast<long long>(load_le64(b.scales)));
        // Lane k takes bytes 2 (k / 4) and 2 (k / 4) + 1 of the eight (each 128-bit half holds them all).
        const __m256i word_of_lane = _mm256_shuffle_epi8(
            words, _mm256_setr_epi8(0, 1, 0, 1, 0, 1, 0, 1, 2, 3, 2, 3, 2, 3, 2, 3, 4, 5, 4, 5, 4, 5, 4, 5, 6, 7, 6, 7, 6, 7, 6, 7));
        const __m256i lift = _mm256_setr_epi16(1 << 13, 1 << 10, 1 << 7, 1 << 4, 1 << 13, 1 << 10, 1 << 7, 1 << 4,
                                               1 << 13, 1 << 10, 1 << 7, 1 << 4, 1 << 13, 1 << 10, 1 << 7, 1 << 4);
        const __m256i s = _mm256_srli_epi16(_mm256_mullo_epi16(word_of_lane, lift), 13);
        return _mm256_add_epi16(_mm256_add_epi16(s, s), _mm256_set1_epi16(1));
    }
    static __m256i unit(const BlockIQ1_M& b, int u) {
        // Entry i's nibble (iq1_m_nibble of group 4u + i): three index bits over its qs byte, and
        // the sign of its delta.
        const __m128i nibbles = field_lanes4(load_u16_at(b.qh + 2 * u), 4, 15);
        const __m128i index = _mm_or_si128(byte_lanes4(b.qs + 4 * u), _mm_slli_epi32(_mm_and_si128(nibbles, _mm_set1_epi32(7)), 8));
        const __m256i negative = _mm256_cvtepi32_epi64(_mm_cmpgt_epi32(nibbles, _mm_set1_epi32(7)));
        const __m256i deltas = _mm256_blendv_epi8(_mm256_set1_epi64x(delta_bytes(false)), _mm256_set1_epi64x(delta_bytes(true)), negative);
        return _mm256_add_epi8(times8(entries64(kIq1sGrid, index)), deltas);
    }
};

}  // namespace

}  // namespace xb::cpu_kernels
