// The tile path of quantized products with AVX-512 VNNI (compiled with -mavx512f -mavx512bw
// -mavx512vl -mavx512vnni, chosen at run time only on CPUs that have them; quant_tiles.hpp says what
// the panel and the columns hold).
//
// (The 512-bit conversions are the masked forms: gcc 12's header leaves the unmasked ones'
// pass-through undefined, which -Werror=maybe-uninitialized refuses.)
//
// Decoding: quant_tile_decoders_avx2.hpp, the bytes flipped to q + 128.
//
// Product: for each group of 16 values, four vpdpbusd (64 unsigned weight bytes against four
// activation bytes broadcast) give the 16 rows' integer dots with one column (eight, over 32
// values, when the format scales by 32 as most do). Each dot starts from -128 x the column's sum
// (what the q + 128 weights add), so that after it come only a conversion and a multiply-add by
// the rows' scales into a sum over the groups that share the column's step d (a q8_K block's 16
// groups), which is multiplied by d once (and one more multiply-add for the offsets, when the
// panel has any). Eight columns share each load of the panel, each column's dot its own chain of
// vpdpbusd. With q6_K (a scale per 16 values) that is 2 operations after every 4 vpdpbusd, where a
// subtraction, conversion, multiply and multiply-add took 4: its 4096 x 4096 x 512 product went
// from 31.5 to 26.4 ms (best of 8 alternating rounds, 2 threads).
#include <immintrin.h>

#include <cstring>

#include "cpu_kernels/quant_tile_decoders_avx2.hpp"
#include "cpu_kernels/quant_tiles.hpp"

namespace xb::cpu_kernels {

namespace {

// The panel in q + 128, as vpdpbusd takes it (unsigned weight bytes against signed activations).
template <typename Block>
struct Plus128Panel {
    static void decode(const std::byte* rows, size_t row_stride, int nrows, int64_t k, TilePanel& panel) {
        int low = 0, high = 0;
        decode_panel_bytes<Block, TilePanel::Encoding::Plus128>(rows, row_stride, nrows, k, panel, low, high);
        set_panel_kind(panel, k);
    }
};

// kCols columns from `first` against the panel, one scale per group (16 values) or per pair of
// groups (kPairs: eight vpdpbusd per scale instead of four).
//
// Each weight vector meets every column in turn, so that the columns' integer dots are kCols
// independent chains: with one column at a time, each dot would be a chain of 4 or 8 dependent
// vpdpbusd (5 cycles each), which left the kernel waiting on latency (GCC kept that loop rolled,
// the float accumulators in memory). Fully unrolled, the dots and accumulators stay in registers.
template <int kCols, bool kOffsets, bool kPairs>
void product_columns(const TilePanel& panel, const TileColumns& columns, int64_t first, int nrows, float* out,
                     size_t out_stride) {
    constexpr int kStep = kPairs ? 2 : 1;
    constexpr int64_t kGroupBytes = kTileGroup * kTileRows;
    __m512 acc[kCols];
#pragma GCC unroll 8
    for (int j = 0; j < kCols; ++j) acc[j] = _mm512_setzero_ps();
    // The groups that share the columns' step d: their scaled dots are summed, then multiplied by
    // d once (16 groups for the q8_K activations, one step of kStep for q8_0's).
    const int64_t groups_per_step = columns.groups_per_step();
    for (int64_t first_group = 0; first_group < columns.groups(); first_group += groups_per_step) {
        __m512 sum[kCols];
#pragma GCC unroll 8
        for (int j = 0; j < kCols; ++j) sum[j] = _mm512_setzero_ps();
        for (int64_t g = first_group; g < first_group + groups_per_step; g += kStep) {
            const auto* w = reinterpret_cast<const __m512i*>(panel.q + g * kGroupBytes);
            // Group g (and g + 1) of the block's columns, kTileGroup bytes per column.
            const int64_t at = columns.at(g, first), pair = columns.pair_at(g / 2, first);
            const auto* a = reinterpret_cast<const uint8_t*>(columns.q + at * kTileGroup);
            // Each dot starts from -128 x the column's sum, which the q + 128 weights add.
            const int32_t* minus_sum128 = kPairs ? columns.pair_minus_sum128 + pair : columns.minus_sum128 + at;
            __m512i dot[kCols];
#pragma GCC unroll 8
            for (int j = 0; j < kCols; ++j) dot[j] = _mm512_set1_epi32(minus_sum128[j]);
#pragma GCC unroll 2
            for (int h = 0; h < kStep; ++h) {
#pragma GCC unroll 4
                for (int i = 0; i < 4; ++i) {
                    const __m512i weights = _mm512_load_si512(w + 4 * h + i);
#pragma GCC unroll 8
                    for (int j = 0; j < kCols; ++j) {
                        const uint8_t* values = a + (h * kTileColumns + j) * kTileGroup + 4 * i;
                        dot[j] = _mm512_dpbusd_epi32(dot[j], weights, _mm512_set1_epi32(static_cast<int>(load_le32(values))));
                    }
                }
            }
            const __m512 scale = _mm512_load_ps(panel.scale + g * kTileRows);
#pragma GCC unroll 8
            for (int j = 0; j < kCols; ++j) sum[j] = _mm512_fmadd_ps(_mm512_maskz_cvtepi32_ps(0xFFFF, dot[j]), scale, sum[j]);
            if constexpr (kOffsets) {
                const __m512 offset = _mm512_load_ps(panel.offset + g * kTileRows);
                const float* dsum = kPairs ? columns.pair_dsum + pair : columns.dsum + at;
#pragma GCC unroll 8
                for (int j = 0; j < kCols; ++j) acc[j] = _mm512_fmadd_ps(offset, _mm512_set1_ps(dsum[j]), acc[j]);
            }
        }
        const float* d = columns.d + columns.at(first_group, first);
#pragma GCC unroll 8
        for (int j = 0; j < kCols; ++j) acc[j] = _mm512_fmadd_ps(sum[j], _mm512_set1_ps(d[j]), acc[j]);
    }
    const auto rows = static_cast<__mmask16>((1u << nrows) - 1u);
#pragma GCC unroll 8
    for (int j = 0; j < kCols; ++j) _mm512_mask_storeu_ps(out + static_cast<size_t>(j) * out_stride, rows, acc[j]);
}

template <bool kOffsets, bool kPairs>
void product_variant(const TilePanel& panel, const TileColumns& columns, int64_t first, int ncols, int nrows, float* out,
                     size_t out_stride) {
    constexpr int kBlock = kTileColumns;
    int j = 0;
    for (; j + kBlock <= ncols; j += kBlock) {
        product_columns<kBlock, kOffsets, kPairs>(panel, columns, first + j, nrows, out + static_cast<size_t>(j) * out_stride,
                                                  out_stride);
    }
    float* rest = out + static_cast<size_t>(j) * out_stride;
    switch (ncols - j) {
        case 1: return product_columns<1, kOffsets, kPairs>(panel, columns, first + j, nrows, rest, out_stride);
        case 2: return product_columns<2, kOffsets, kPairs>(panel, columns, first + j, nrows, rest, out_stride);
        case 3: return product_columns<3, kOffsets, kPairs>(panel, columns, first + j, nrows, rest, out_stride);
        case 4: return product_columns<4, kOffsets, kPairs>(panel, columns, first + j, nrows, rest, out_stride);
        case 5: return product_columns<5, kOffsets, kPairs>(panel, columns, first + j, nrows, rest, out_stride);
        case 6: return product_columns<6, kOffsets, kPairs>(panel, columns, first + j, nrows, rest, out_stride);
        case 7: return product_columns<7, kOffsets, kPairs>(panel, columns, first + j, nrows, rest, out_stride);
        default: return;
    }
}

void product(const TilePanel& panel, const TileColumns& columns, int64_t first, int ncols, int nrows, float* out,
             size_t out_stride) {
    if (panel.pairs) {
        if (panel.has_offsets) return product_variant<true, true>(panel, columns, first, ncols, nrows, out, out_stride);
        return product_variant<false, true>(panel, columns, first, ncols, nrows, out, out_stride);
    }
    if (panel.has_offsets) return product_variant<true, false>(panel, columns, first, ncols, nrows, out, out_stride);
    product_variant<false, false>(panel, columns, first, ncols, nrows, out, out_stride);
}

// lo in the low 256 bits, hi in the high.
__m512 concat_ps(__m256 lo, __m256 hi) {
    const __m512d zero = _mm512_setzero_pd();
    const __m512d low = _mm512_mask_insertf64x4(zero, 0xFF, zero, _mm256_castps_pd(lo), 0);
    return _mm512_castpd_ps(_mm512_mask_insertf64x4(zero, 0xFF, low, _mm256_castps_pd(hi), 1));
}

// Plus128Panel<BlockQ4_K>'s panel straight from two 8-row groups: per 16 values of the 16 rows, the
// two groups' chunks split into nibbles, and each 4-value line of the panel (16 rows x 4 bytes)
// gathered from their 32-bit lanes (lane 2r holds values 0-3 of row r's 8, lane 2r + 1 values 4-7)
// by one two-source permute; scales d * sc and offsets -dmin * m 16 rows at a time.
void decode_q4_K_x8(const BlockQ4_Kx8* first, const BlockQ4_Kx8* second, int64_t k, TilePanel& panel) {
    const __m512i zero = _mm512_setzero_si512();
    const __m512i low4 = _mm512_set1_epi8(0x0F);
    const __m512i plus128 = _mm512_set1_epi8(static_cast<char>(0x80));
    const __m512i even = _mm512_setr_epi32(0, 2, 4, 6, 8, 10, 12, 14, 16, 18, 20, 22, 24, 26, 28, 30);
    const __m512i odd = _mm512_add_epi32(even, _mm512_set1_epi32(1));
    constexpr int kGroups = kQKK / kTileGroup;
    for (int64_t bi = 0; bi < k / kQKK; ++bi) {
        const BlockQ4_Kx8& a = first[bi];
        uint8_t* q = panel.q + bi * kQKK / 4 * (4 * kTileRows);
        for (int c = 0; c < kQKK / 16; ++c) {
            const __m512i raw_a = _mm512_loadu_si512(a.qs[c]);
            const __m512i raw_b = second != nullptr ? _mm512_loadu_si512(second[bi].qs[c]) : zero;
            const __m512i lo_a = _mm512_and_si512(raw_a, low4);
            const __m512i lo_b = _mm512_and_si512(raw_b, low4);
            const __m512i hi_a = _mm512_and_si512(_mm512_maskz_srli_epi16(~__mmask32{0}, raw_a, 4), low4);
            const __m512i hi_b = _mm512_and_si512(_mm512_maskz_srli_epi16(~__mmask32{0}, raw_b, 4), low4);
            uint8_t* line = q + c * 4 * (4 * kTileRows);
            const __m512i lines[4] = {_mm512_permutex2var_epi32(lo_a, even, lo_b), _mm512_permutex2var_epi32(lo_a, odd, lo_b),
                                      _mm512_permutex2var_epi32(hi_a, even, hi_b), _mm512_permutex2var_epi32(hi_a, odd, hi_b)};
            for (int i = 0; i < 4; ++i) _mm512_storeu_si512(line + i * 64, _mm512_xor_si512(lines[i], plus128));
        }
        // Rows 8-15 of a tile of 8 rows get zero scales and offsets, as the rows' decoder gives them.
        const __m256 d_a = _mm256_cvtph_ps(_mm_loadu_si128(reinterpret_cast<const __m128i*>(a.d)));
        const __m256 dmin_a = _mm256_cvtph_ps(_mm_loadu_si128(reinterpret_cast<const __m128i*>(a.dmin)));
        // -dmin by its sign bit, as the rows' decoder negates it (-0 where dmin is 0); +0 for padding.
        const __m256 sign = _mm256_set1_ps(-0.0f);
        const __m256 d_b = second != nullptr ? _mm256_cvtph_ps(_mm_loadu_si128(reinterpret_cast<const __m128i*>(second[bi].d))) : _mm256_setzero_ps();
        const __m256 neg_dmin_b = second != nullptr ? _mm256_xor_ps(_mm256_cvtph_ps(_mm_loadu_si128(reinterpret_cast<const __m128i*>(second[bi].dmin))), sign)
                                                    : _mm256_setzero_ps();
        const __m512 d = concat_ps(d_a, d_b);
        const __m512 neg_dmin = concat_ps(_mm256_xor_ps(dmin_a, sign), neg_dmin_b);
        float* scale = panel.scale + bi * kGroups * kTileRows;
        float* offset = panel.offset + bi * kGroups * kTileRows;
        for (int s = 0; s < 8; ++s) {
            // The 16 rows' values as floats: group a's 8 bytes, then the second group's (0 for padding).
            const auto floats16 = [](uint64_t of_a, uint64_t of_b) {
                return _mm512_maskz_cvtepi32_ps(0xFFFF, _mm512_maskz_cvtepu8_epi32(0xFFFF, _mm_set_epi64x(static_cast<long long>(of_b), static_cast<long long>(of_a))));
            };
            const __m512 sc = _mm512_mul_ps(floats16(q4_K_x8_scales(a, s), second != nullptr ? q4_K_x8_scales(second[bi], s) : 0), d);
            const __m512 mn = _mm512_mul_ps(floats16(q4_K_x8_mins(a, s), second != nullptr ? q4_K_x8_mins(second[bi], s) : 0), neg_dmin);
            for (int g = 2 * s; g < 2 * s + 2; ++g) {
                _mm512_storeu_ps(scale + g * kTileRows, sc);
                _mm512_storeu_ps(offset + g * kTileRows, mn);
            }
        }
    }
    panel.encoding = TilePanel::Encoding::Plus128;
    panel.largest = 255;
    panel.integer_scales = false;
    panel.has_mins = false;
    panel.has_bias = false;
    set_panel_kind(panel, k);
}

QuantTiles make_table() {
    QuantTiles t{};
    set_tile_decoders<Plus128Panel>(t.decode);
    t.decode_q4_K_x8 = &decode_q4_K_x8;
    t.product = &product;
    return t;
}

}  // namespace

const QuantTiles& quant_tiles_avx512() {
    static const QuantTiles table = make_table();
    return table;
}

}  // namespace xb::cpu_kernels
