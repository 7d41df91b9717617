// The int8 panels of the tile path (quant_tiles.hpp), decoded from every weight format with AVX2:
// each weight block becomes its units' 32 signed bytes in AVX2 registers (TileDecoder: the row
// products' decoders, q4_K/q5_K's and q6_K's units by hand) and the float scale and offset of each
// 16 values; the bytes of 16 rows are transposed in 4-byte words so that one 64-byte line holds four
// values of every row. Both tile tables decode with it, each in its own encoding of the bytes
// (TilePanel::encoding): the AVX-512 VNNI one flips them to q + 128 as the panel is written, the
// AVX2 one keeps q and narrows the panel afterwards when its values span 127 or less.
//
// For the translation units compiled with AVX2 or more (quant_tiles_avx2.cpp, quant_tiles_avx512.cpp);
// everything is in an unnamed namespace, so that each has its own copy built for its own
// instruction set (see quant_unit_decoders_avx2.hpp).
#pragma once

#include <immintrin.h>

#include <algorithm>
#include <cstring>
#include <type_traits>

#include "core/quant.hpp"
#include "core/quant_block_types.hpp"
#include "cpu_kernels/quant_tiles.hpp"
#include "cpu_kernels/quant_unit_decoders_avx2.hpp"
#include "cpu_kernels/weight_prefetch.hpp"

namespace xb::cpu_kernels {

namespace {

__m256i low_nibbles(__m256i v) { return _mm256_and_si256(v, _mm256_set1_epi8(0x0F)); }
__m256i high_nibbles(__m256i v) { return _mm256_and_si256(_mm256_srli_epi16(v, 4), _mm256_set1_epi8(0x0F)); }
// Each 16-bit lane shifted right by a count known only at run time.
__m256i shift_right(__m256i v, int bits) { return _mm256_srl_epi16(v, _mm_cvtsi32_si128(bits)); }

// TileDecoder<Block>::decode(b, units, scale, offset): the block's units as signed bytes and the
// scale and offset of each group of 16 values (core/quant_unit.hpp's form of every format), from the
// row products' decoders (quant_unit_decoders_avx2.hpp); q6_K's below. A type without one has no
// tile path (its decode entry is nullptr).
template <typename Block>
struct TileDecoder;

template <typename Block>
    requires requires { SuperDecoder<Block>::scale; }
struct TileDecoder<Block> {
    static constexpr int kUnits = Block::kElems / kUnitValues;
    static void decode(const Block& b, __m256i* units, float* scale, float* offset) {
        // The sixteen integer scales times the block's float scale, eight lanes at a time.
        const __m256i scales16 = SuperDecoder<Block>::scales(b);
        const __m256 d = _mm256_set1_ps(SuperDecoder<Block>::scale(b));
        for (int half = 0; half < 2; ++half) {
            const __m128i lanes = half == 0 ? _mm256_castsi256_si128(scales16) : _mm256_extracti128_si256(scales16, 1);
            _mm256_storeu_ps(scale + 8 * half, _mm256_mul_ps(_mm256_cvtepi32_ps(_mm256_cvtepi16_epi32(lanes)), d));
            _mm256_storeu_ps(offset + 8 * half, _mm256_setzero_ps());
        }
        if constexpr (std::is_same_v<Block, BlockQ2_K>) {  // minus dmin times each group's 4-bit min
            const float dmin = fp16(b.dmin);
            for (int g = 0; g < kQKK / kTileGroup; ++g) offset[g] = -dmin * static_cast<float>(b.scales[g] >> 4);
        }
        for (int u = 0; u < kUnits; ++u) units[u] = SuperDecoder<Block>::unit(b, u);
    }
};

template <typename Block>
    requires requires { DecoderAvx2<Block>::decode; }
struct TileDecoder<Block> {
    static constexpr int kUnits = Block::kElems / kUnitValues;
    static void decode(const Block& b, __m256i* units, float* scale, float* offset) {
        for (int u = 0; u < kUnits; ++u) {
            const UnitAvx2 unit = DecoderAvx2<Block>::decode(b, u);
            units[u] = unit.q;
            for (int h = 0; h < 2; ++h) {
                scale[2 * u + h] = unit.scale[h];
                offset[2 * u + h] = 0.0f;
            }
        }
    }
};

// The legacy formats: one unit, w = d * q + m for both its groups.
template <typename Format>
struct LegacyTileDecoder {
    static constexpr int kUnits = 1;
    static void decode(const typename Format::Block& b, __m256i* units, float* scale, float* offset) {
        const Decoded x = Format::decode(b);
        units[0] = x.q;
        for (int g = 0; g < 2; ++g) {
            scale[g] = x.d;
            offset[g] = x.m;
        }
    }
};
template <>
struct TileDecoder<BlockQ4_0> : LegacyTileDecoder<Q4_0Format> {};
template <>
struct TileDecoder<BlockQ4_1> : LegacyTileDecoder<Q4_1Format> {};
template <>
struct TileDecoder<BlockQ5_0> : LegacyTileDecoder<Q5_0Format> {};
template <>
struct TileDecoder<BlockQ5_1> : LegacyTileDecoder<Q5_1Format> {};
template <>
struct TileDecoder<BlockQ8_0> : LegacyTileDecoder<Q8_0Format> {};

// q4_K and q5_K: unit j is sub-block j, scaled by d * its 6-bit scale, offset by -dmin * its min.
template <typename Block, bool kFifthBit>
void k_affine_units(const Block& b, __m256i* units) {
    __m256i high = _mm256_setzero_si256();
    if constexpr (kFifthBit) high = load32(b.qh);
    for (int j = 0; j < 8; ++j) {
        const __m256i q4 = load32(b.qs + 32 * (j / 2));
        __m256i q = j % 2 == 0 ? low_nibbles(q4) : high_nibbles(q4);
        if constexpr (kFifthBit) {
            // Bit j of each qh byte, moved to bit 4 (16-bit shifts keep each byte's own bits here).
            const __m256i bit = _mm256_and_si256(shift_right(high, j), _mm256_set1_epi8(1));
            q = _mm256_or_si256(q, _mm256_slli_epi16(bit, 4));
        }
        units[j] = q;
    }
}

template <typename Block, bool kFifthBit>
struct KAffineTileDecoder {
    static constexpr int kUnits = 8;
    static constexpr bool kScalesBy32 = true;  // of the integer scales
    static void decode(const Block& b, __m256i* units, float* scale, float* offset) {
        __m128i scales16, mins16;
        k_scales_mins(b.scales, scales16, mins16);
        const __m256 scales = _mm256_mul_ps(_mm256_cvtepi32_ps(_mm256_cvtepi16_epi32(scales16)), _mm256_set1_ps(fp16(b.d)));
        const __m256 mins = _mm256_mul_ps(_mm256_cvtepi32_ps(_mm256_cvtepi16_epi32(mins16)), _mm256_set1_ps(-fp16(b.dmin)));
        // Each sub-block's value for both of its groups of 16.
        const __m256i twice_lo = _mm256_set_epi32(3, 3, 2, 2, 1, 1, 0, 0), twice_hi = _mm256_set_epi32(7, 7, 6, 6, 5, 5, 4, 4);
        _mm256_storeu_ps(scale, _mm256_permutevar8x32_ps(scales, twice_lo));
        _mm256_storeu_ps(scale + 8, _mm256_permutevar8x32_ps(scales, twice_hi));
        _mm256_storeu_ps(offset, _mm256_permutevar8x32_ps(mins, twice_lo));
        _mm256_storeu_ps(offset + 8, _mm256_permutevar8x32_ps(mins, twice_hi));
        k_affine_units<Block, kFifthBit>(b, units);
    }
    // The integer form (TilePanel::integer_scales): each group's 6-bit scale and min (those of its
    // sub-block), d and -dmin.
    static void decode_integer(const Block& b, __m256i* units, int16_t* iscale, int16_t* imin, float& super_scale,
                               float& super_min) {
        __m128i scales16, mins16;
        k_scales_mins(b.scales, scales16, mins16);
        alignas(16) int16_t sc[8], mn[8];
        _mm_store_si128(reinterpret_cast<__m128i*>(sc), scales16);
        _mm_store_si128(reinterpret_cast<__m128i*>(mn), mins16);
        for (int g = 0; g < kQKK / kTileGroup; ++g) {
            iscale[g] = sc[g / 2];
            imin[g] = mn[g / 2];
        }
        super_scale = fp16(b.d);
        super_min = -fp16(b.dmin);
        k_affine_units<Block, kFifthBit>(b, units);
    }
};
template <>
struct TileDecoder<BlockQ4_K> : KAffineTileDecoder<BlockQ4_K, false> {};
template <>
struct TileDecoder<BlockQ5_K> : KAffineTileDecoder<BlockQ5_K, true> {};

// q6_K: unit u holds values 32u..; of its half h = u / 4 and quarter g = u % 4, the low four bits
// are ql[64h + 32 (g % 2)..]'s low (g < 2) or high nibbles and the top two bits 2g..2g+1 of
// qh[32h..]; every 16 values have their own signed 8-bit scale.
template <>
struct TileDecoder<BlockQ6_K> {
    static constexpr int kUnits = 8;
    static constexpr bool kScalesBy32 = false;
    static void units_of(const BlockQ6_K& b, __m256i* units) {
        for (int u = 0; u < kUnits; ++u) {
            const int h = u / 4, g = u % 4;
            const __m256i ql = load32(b.ql + 64 * h + 32 * (g % 2));
            const __m256i lo = g < 2 ? low_nibbles(ql) : high_nibbles(ql);
            const __m256i top = _mm256_and_si256(shift_right(load32(b.qh + 32 * h), 2 * g), _mm256_set1_epi8(3));
            units[u] = _mm256_sub_epi8(_mm256_or_si256(lo, _mm256_slli_epi16(top, 4)), _mm256_set1_epi8(32));
        }
    }
    static void decode(const BlockQ6_K& b, __m256i* units, float* scale, float* offset) {
        units_of(b, units);
        const float d = fp16(b.d);
        for (int g = 0; g < kQKK / kTileGroup; ++g) {
            scale[g] = d * static_cast<float>(b.scales[g]);
            offset[g] = 0.0f;
        }
    }
    static void decode_integer(const BlockQ6_K& b, __m256i* units, int16_t* iscale, int16_t* imin, float& super_scale,
                               float& super_min) {
        units_of(b, units);
        for (int g = 0; g < kQKK / kTileGroup; ++g) {
            iscale[g] = b.scales[g];
            imin[g] = 0;
        }
        super_scale = fp16(b.d);
        super_min = 0.0f;
    }
};

// Eight rows' 32 bytes (row i at src + i * stride) as eight 4-byte columns of the eight rows: word
// c of every row to dst + c * 64 (each 32 bytes: rows 0..7).
void transpose_rows(const uint8_t* src, size_t stride, uint8_t* dst) {
    __m256i r[8];
    for (int i = 0; i < 8; ++i) r[i] = load32(src + i * stride);
    __m256i t[8];
    for (int i = 0; i < 4; ++i) {
        t[2 * i] = _mm256_unpacklo_epi32(r[2 * i], r[2 * i + 1]);      // words 0, 1 | 4, 5 of the pair
        t[2 * i + 1] = _mm256_unpackhi_epi32(r[2 * i], r[2 * i + 1]);  // words 2, 3 | 6, 7
    }
    __m256i u[8];
    for (int i = 0; i < 2; ++i) {
        u[4 * i + 0] = _mm256_unpacklo_epi64(t[4 * i], t[4 * i + 2]);      // word 0 | 4 of four rows
        u[4 * i + 1] = _mm256_unpackhi_epi64(t[4 * i], t[4 * i + 2]);      // word 1 | 5
        u[4 * i + 2] = _mm256_unpacklo_epi64(t[4 * i + 1], t[4 * i + 3]);  // word 2 | 6
        u[4 * i + 3] = _mm256_unpackhi_epi64(t[4 * i + 1], t[4 * i + 3]);  // word 3 | 7
    }
    for (int c = 0; c < 4; ++c) {
        _mm256_storeu_si256(reinterpret_cast<__m256i*>(dst + c * 64), _mm256_permute2x128_si256(u[c], u[4 + c], 0x20));
        _mm256_storeu_si256(reinterpret_cast<__m256i*>(dst + (c + 4) * 64), _mm256_permute2x128_si256(u[c], u[4 + c], 0x31));
    }
}

// Whether any offset is not zero, and whether every pair of groups shares its scales and offsets
// (16 rows at a time), for the kernel's variant.
void set_panel_kind(TilePanel& panel, int64_t k) {
    __m256 offsets = _mm256_setzero_ps(), unequal = _mm256_setzero_ps();
    const __m256 zero = _mm256_setzero_ps();
    for (int64_t g = 0; g < k / kTileGroup; g += 2) {
        for (int half = 0; half < kTileRows; half += 8) {
            const __m256 s0 = _mm256_load_ps(panel.scale + g * kTileRows + half);
            const __m256 s1 = _mm256_load_ps(panel.scale + (g + 1) * kTileRows + half);
            const __m256 o0 = _mm256_load_ps(panel.offset + g * kTileRows + half);
            const __m256 o1 = _mm256_load_ps(panel.offset + (g + 1) * kTileRows + half);
            offsets = _mm256_or_ps(offsets, _mm256_or_ps(_mm256_cmp_ps(o0, zero, _CMP_NEQ_UQ), _mm256_cmp_ps(o1, zero, _CMP_NEQ_UQ)));
            unequal = _mm256_or_ps(unequal, _mm256_or_ps(_mm256_cmp_ps(s0, s1, _CMP_NEQ_UQ), _mm256_cmp_ps(o0, o1, _CMP_NEQ_UQ)));
        }
    }
    panel.has_offsets = _mm256_movemask_ps(offsets) != 0;
    panel.pairs = _mm256_movemask_ps(unequal) == 0;
}

constexpr int64_t kPrefetchBlocks = 2;

// Whether the format's tile decoder has the integer form of TilePanel::integer_scales.
template <typename Block>
constexpr bool kHasIntegerScales = requires { &TileDecoder<Block>::decode_integer; };

// Decodes rows [0, nrows) of the weight matrix into the panel in encoding kEncoding: Plus128 or
// Signed (TilePanel::Encoding), with float scales and offsets or, kInteger, integer scales
// (TilePanel::integer_scales; the format must have them). Rows from nrows on get the bytes of 0 and
// zero scales. With Signed, `low` and `high` end as the smallest and largest byte written, for
// narrowing.
template <typename Block, TilePanel::Encoding kEncoding, bool kInteger = false>
void decode_panel_bytes(const std::byte* rows, size_t row_stride, int nrows, int64_t k, TilePanel& panel, int& low,
                        int& high) {
    static_assert(kEncoding != TilePanel::Encoding::Unsigned, "an unsigned panel is a narrowed signed one");
    using Decoder = TileDecoder<Block>;
    constexpr int kElems = Decoder::kUnits * kUnitValues;
    constexpr int kGroups = kElems / kTileGroup;
    constexpr bool kPlus128 = kEncoding == TilePanel::Encoding::Plus128;
    static_assert(!kInteger || kElems == kQKK, "integer scales are per 256-value super-block");
    alignas(64) uint8_t bytes[kTileRows][kElems];
    const __m256i flip = _mm256_set1_epi8(kPlus128 ? static_cast<char>(0x80) : 0);
    __m256i lowest = _mm256_setzero_si256(), highest = _mm256_setzero_si256();  // the padding rows' 0 is in range anyway
    bool mins = false;
    for (int64_t bi = 0; bi < k / kElems; ++bi) {
        float* scale = panel.scale + bi * kGroups * kTileRows;
        float* offset = panel.offset + bi * kGroups * kTileRows;
        int16_t* iscale = panel.iscale + bi * kGroups * kTileRows * 2;
        int16_t* imin = panel.imin + bi * (kGroups / 2) * kTileRows * 2;
        for (int r = 0; r < kTileRows; ++r) {
            int16_t is[kGroups] = {}, im[kGroups] = {};
            float s[kGroups] = {}, o[kGroups] = {}, super_scale = 0.0f, super_min = 0.0f;
            if (r >= nrows) {
                std::memset(bytes[r], kPlus128 ? 0x80 : 0, kElems);
            } else {
                const auto* row = reinterpret_cast<const Block*>(rows + static_cast<size_t>(r) * row_stride);
                const Block& b = row[bi];
                // Sixteen rows are sixteen streams, more than the hardware prefetchers follow well:
                // ask for this row's block two ahead while this one decodes.
                if (bi + kPrefetchBlocks < k / kElems) prefetch_block_ahead(row + bi, kPrefetchBlocks * sizeof(Block));
                __m256i units[Decoder::kUnits];
                if constexpr (kInteger) {
                    Decoder::decode_integer(b, units, is, im, super_scale, super_min);
                } else {
                    Decoder::decode(b, units, s, o);
                }
                for (int u = 0; u < Decoder::kUnits; ++u) {
                    if constexpr (!kPlus128) {
                        lowest = _mm256_min_epi8(lowest, units[u]);
                        highest = _mm256_max_epi8(highest, units[u]);
                    }
                    _mm256_store_si256(reinterpret_cast<__m256i*>(bytes[r] + kUnitValues * u), _mm256_xor_si256(units[u], flip));
                }
            }
            if constexpr (kInteger) {
                for (int g = 0; g < kGroups; ++g) iscale[(g * kTileRows + r) * 2] = iscale[(g * kTileRows + r) * 2 + 1] = is[g];
                for (int g = 0; g < kGroups; ++g) {
                    imin[((g / 2) * kTileRows + r) * 2 + g % 2] = im[g];
                    mins = mins || im[g] != 0;
                }
                panel.super_scale[bi * kTileRows + r] = super_scale;
                panel.super_min[bi * kTileRows + r] = super_min;
            } else {
                for (int g = 0; g < kGroups; ++g) {
                    scale[g * kTileRows + r] = s[g];
                    offset[g * kTileRows + r] = o[g];
                }
            }
        }
        for (int u = 0; u < Decoder::kUnits; ++u) {
            uint8_t* dst = panel.q + (bi * kElems + kUnitValues * u) / 4 * (4 * kTileRows);
            transpose_rows(bytes[0] + kUnitValues * u, kElems, dst);
            transpose_rows(bytes[8] + kUnitValues * u, kElems, dst + 32);
        }
    }
    panel.encoding = kEncoding;
    panel.largest = kPlus128 ? 255 : 127;
    panel.integer_scales = kInteger;
    panel.has_mins = mins;
    panel.has_bias = false;
    if constexpr (kInteger) panel.pairs = Decoder::kScalesBy32;
    if constexpr (!kPlus128) {
        alignas(32) int8_t lo[32], hi[32];
        _mm256_store_si256(reinterpret_cast<__m256i*>(lo), lowest);
        _mm256_store_si256(reinterpret_cast<__m256i*>(hi), highest);
        low = high = 0;
        for (int i = 0; i < 32; ++i) {
            low = std::min<int>(low, lo[i]);
            high = std::max<int>(high, hi[i]);
        }
    }
}

// Fills `decode` with the panel decoder `Entry<Block>::decode` of every type that has a TileDecoder
// (nullptr for the others: q8_K is an activation format, never a weight here).
template <template <typename> class Entry>
void set_tile_decoders(QuantTiles::DecodeFn (&decode)[kDTypeCount]) {
    for (int i = 0; i < kDTypeCount; ++i) {
        decode[i] = with_block_type(
            static_cast<DType>(i),
            []<typename Block>(BlockTag<Block>) -> QuantTiles::DecodeFn {
                if constexpr (requires { TileDecoder<Block>::kUnits; }) {
                    return &Entry<Block>::decode;
                } else {
                    return nullptr;
                }
            },
            QuantTiles::DecodeFn{nullptr});
    }
}

}  // namespace

}  // namespace xb::cpu_kernels
