// The tile path of quantized products with AVX2 (compiled with -mavx2 -mfma -mf16c; chosen at run
// time on CPUs with AVX2 but not AVX-512 VNNI, and with XB_CPU_ISA=avx2; quant_tiles.hpp says what
// the panel and the columns hold).
//
// Decoding: quant_tile_decoders_avx2.hpp in signed bytes. A panel whose values span 127 or less
// (every format but q8_0, iq4_nl and iq4_xs, and those too where a tile's values happen to) is then
// narrowed to unsigned bytes q - low, with low * scale moved into the offsets.
//
// Product: vpmaddubsw multiplies unsigned bytes by signed bytes and adds neighbouring pairs into
// saturating 16-bit lanes. Each ymm register holds four values of 8 rows (half of a panel line).
//   - Unsigned panel (bytes <= largest): the bytes go straight in against the column's four
//     activation bytes broadcast (|a| <= 127, as the activation quantizers round). Each 16-bit lane
//     is then at most 2 * largest * 127, so up to 32767 / (254 * largest) of them are added in 16
//     bits (8 for 4-bit values, 2 for 6-bit ones) before one vpmaddwd by ones widens them to 32.
//   - Signed panel: ggml's sign trick, |q| against a with q's sign (vpsignb), widened every step:
//     |q| <= 128 and |a| <= 127 keep each lane within 32512.
// Four columns share each load of the panel; per group of 16 values (32 where the format scales by
// 32) one multiply by the rows' scales and a multiply-add by the column's step close the integer
// dot, and one more multiply-add adds the offsets when the panel has any.
#include <immintrin.h>

#include <algorithm>

#include "cpu_kernels/quant_tile_decoders_avx2.hpp"
#include "cpu_kernels/quant_tiles.hpp"

namespace xb::cpu_kernels {

namespace {

// A signed panel whose bytes span 127 or less becomes unsigned: q - low, and value = scale * q +
// offset = scale * (q - low) + (offset + scale * low).
void narrow_panel(TilePanel& panel, int64_t k, int low, int high) {
    if (high - low > 127) {
        panel.encoding = TilePanel::Encoding::Signed;
        return;
    }
    panel.encoding = TilePanel::Encoding::Unsigned;
    panel.largest = high - low;
    if (low == 0) return;
    const __m256i shift = _mm256_set1_epi8(static_cast<char>(low));
    for (int64_t i = 0; i < k * kTileRows; i += 32) {
        auto* p = reinterpret_cast<__m256i*>(panel.q + i);
        _mm256_store_si256(p, _mm256_sub_epi8(_mm256_load_si256(p), shift));
    }
    const __m256 by = _mm256_set1_ps(static_cast<float>(low));
    for (int64_t i = 0; i < k / kTileGroup * kTileRows; i += 8) {
        _mm256_store_ps(panel.offset + i, _mm256_fmadd_ps(_mm256_load_ps(panel.scale + i), by, _mm256_load_ps(panel.offset + i)));
    }
}

template <typename Block>
struct NarrowedPanel {
    static void decode(const std::byte* rows, size_t row_stride, int nrows, int64_t k, TilePanel& panel) {
        int low = 0, high = 0;
        decode_panel_bytes<Block, TilePanel::Encoding::Signed>(rows, row_stride, nrows, k, panel, low, high);
        narrow_panel(panel, k, low, high);
        set_panel_kind(panel, k);
    }
};

constexpr int kPassColumns = 4;
constexpr int kHalfRows = 8;

// Four columns from `first` against one half of the panel (rows 8 * half ..), kSums vpmaddubsw
// results added in 16 bits per widening (0: a signed panel, widened every step), one scale per
// group of 16 values or, with kPairs, per 32. Stores columns [0, ncols) and the half's first `rows`
// rows.
template <int kSums, bool kOffsets, bool kPairs>
void product_pass(const TilePanel& panel, const TileColumns& columns, int64_t first, int half, int ncols, int rows,
                  float* out, size_t out_stride) {
    constexpr bool kSigned = kSums == 0;
    constexpr int kChunk = kSigned ? 1 : kSums;   // steps added in 16 bits
    constexpr int kSteps = kPairs ? 8 : 4;        // steps of 4 values per scale
    constexpr int64_t kGroups = kPairs ? 2 : 1;   // groups of 16 values per scale
    static_assert(kSteps % kChunk == 0);
    constexpr int64_t kLine = 4 * kTileRows;      // bytes per 4 values of every row
    const __m256i ones = _mm256_set1_epi16(1);
    const uint8_t* weights = panel.q + kHalfRows * 4 * half;
    __m256 acc[kPassColumns];
    for (auto& a : acc) a = _mm256_setzero_ps();
    for (int64_t g = 0; g < columns.groups(); g += kGroups) {
        const int64_t at = columns.at(g, first);
        const int8_t* a = columns.q + at * kTileGroup;
        const uint8_t* w_group = weights + 4 * g * kLine;
        __m256i dot[kPassColumns];
        for (auto& d : dot) d = _mm256_setzero_si256();
        // Fully unrolled (the step and column are constants in every address).
#pragma GCC unroll 8
        for (int s0 = 0; s0 < kSteps; s0 += kChunk) {
            __m256i sums[kPassColumns];
#pragma GCC unroll 8
            for (int t = 0; t < kChunk; ++t) {
                const int s = s0 + t;
                const __m256i w = _mm256_load_si256(reinterpret_cast<const __m256i*>(w_group + s * kLine));
                [[maybe_unused]] const __m256i magnitude = kSigned ? _mm256_sign_epi8(w, w) : w;
#pragma GCC unroll 4
                for (int j = 0; j < kPassColumns; ++j) {
                    // Values 4 (s % 4) .. of group g + s / 4 of the column.
                    const int8_t* values = a + ((s / 4) * kTileColumns + j) * kTileGroup + 4 * (s % 4);
                    const __m256i x = _mm256_set1_epi32(static_cast<int>(load_le32(reinterpret_cast<const uint8_t*>(values))));
                    __m256i p;
                    if constexpr (kSigned) {
                        p = _mm256_maddubs_epi16(magnitude, _mm256_sign_epi8(x, w));
                    } else {
                        p = _mm256_maddubs_epi16(w, x);
                    }
                    sums[j] = t == 0 ? p : _mm256_add_epi16(sums[j], p);
                    // Keeps the additions a chain in this order: GCC otherwise re-associates them
                    // into a tree, holding every step's product at once, and spills 16 registers
                    // to the stack (75 stack accesses in the q4_K kernel against 35 with this).
                    __asm__("" : "+x"(sums[j]));
                }
            }
#pragma GCC unroll 4
            for (int j = 0; j < kPassColumns; ++j) dot[j] = _mm256_add_epi32(dot[j], _mm256_madd_epi16(sums[j], ones));
        }
        const __m256 scale = _mm256_load_ps(panel.scale + g * kTileRows + kHalfRows * half);
        const float* d = columns.d + at;
        for (int j = 0; j < kPassColumns; ++j) {
            acc[j] = _mm256_fmadd_ps(_mm256_mul_ps(_mm256_cvtepi32_ps(dot[j]), scale), _mm256_broadcast_ss(d + j), acc[j]);
        }
        if constexpr (kOffsets) {
            const __m256 offset = _mm256_load_ps(panel.offset + g * kTileRows + kHalfRows * half);
            const float* dsum = kPairs ? columns.pair_dsum + columns.pair_at(g / 2, first) : columns.dsum + at;
            for (int j = 0; j < kPassColumns; ++j) acc[j] = _mm256_fmadd_ps(offset, _mm256_broadcast_ss(dsum + j), acc[j]);
        }
    }
    const __m256i lanes = _mm256_setr_epi32(0, 1, 2, 3, 4, 5, 6, 7);
    const __m256i mask = _mm256_cmpgt_epi32(_mm256_set1_epi32(rows), lanes);
    for (int j = 0; j < std::min(ncols, kPassColumns); ++j) {
        _mm256_maskstore_ps(out + static_cast<size_t>(j) * out_stride + kHalfRows * half, mask, acc[j]);
    }
}

template <int kSums, bool kOffsets, bool kPairs>
void product_variant(const TilePanel& panel, const TileColumns& columns, int64_t first, int ncols, int nrows, float* out,
                     size_t out_stride) {
    // The columns are padded with zeros to whole blocks of kTileColumns (a multiple of four), so
    // every pass reads four.
    for (int j = 0; j < ncols; j += kPassColumns) {
        float* at = out + static_cast<size_t>(j) * out_stride;
        for (int half = 0; half * kHalfRows < nrows; ++half) {
            const int rows = std::min(kHalfRows, nrows - half * kHalfRows);
            product_pass<kSums, kOffsets, kPairs>(panel, columns, first + j, half, ncols - j, rows, at, out_stride);
        }
    }
}

template <int kSums>
void product_sums(const TilePanel& panel, const TileColumns& columns, int64_t first, int ncols, int nrows, float* out,
                  size_t out_stride) {
    if (panel.pairs) {
        if (panel.has_offsets) return product_variant<kSums, true, true>(panel, columns, first, ncols, nrows, out, out_stride);
        return product_variant<kSums, false, true>(panel, columns, first, ncols, nrows, out, out_stride);
    }
    // A scale every 16 values: at most four steps between widenings.
    constexpr int kSums16 = std::min(kSums, 4);
    if (panel.has_offsets) return product_variant<kSums16, true, false>(panel, columns, first, ncols, nrows, out, out_stride);
    product_variant<kSums16, false, false>(panel, columns, first, ncols, nrows, out, out_stride);
}

// How many vpmaddubsw results of an unsigned panel a 16-bit lane can add: each is at most
// 2 * largest * 127 (a power of two up to 8, the steps of a 32-value scale).
int sums_per_widening(int largest) {
    int sums = 8;
    while (sums > 1 && sums * 2 * largest * 127 > 32767) sums /= 2;
    return sums;
}

void product(const TilePanel& panel, const TileColumns& columns, int64_t first, int ncols, int nrows, float* out,
             size_t out_stride) {
    if (panel.encoding != TilePanel::Encoding::Unsigned) return product_sums<0>(panel, columns, first, ncols, nrows, out, out_stride);
    switch (sums_per_widening(panel.largest)) {
        case 8: return product_sums<8>(panel, columns, first, ncols, nrows, out, out_stride);
        case 4: return product_sums<4>(panel, columns, first, ncols, nrows, out, out_stride);
        case 2: return product_sums<2>(panel, columns, first, ncols, nrows, out, out_stride);
        default: return product_sums<1>(panel, columns, first, ncols, nrows, out, out_stride);
    }
}

QuantTiles make_table() {
    QuantTiles t{};
    set_tile_decoders<NarrowedPanel>(t.decode);
    t.product = &product;
    return t;
}

}  // namespace

const QuantTiles& quant_tiles_avx2() {
    static const QuantTiles table = make_table();
    return table;
}

}  // namespace xb::cpu_kernels
