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

QuantTiles make_table() {
    QuantTiles t{};
    set_tile_decoders<Plus128Panel>(t.decode);
    t.product = &product;
    return t;
}

}  // namespace

const QuantTiles& quant_tiles_avx512() {
    static const QuantTiles table = make_table();
    return table;
}

}  // namespace xb::cpu_kernels
