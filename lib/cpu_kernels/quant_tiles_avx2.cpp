// The tile path of quantized products with AVX2 (compiled with -mavx2 -mfma -mf16c; chosen at run
// time on CPUs with AVX2 but not AVX-512 VNNI, and with XB_CPU_ISA=avx2; quant_tiles.hpp says what
// the panel and the columns hold).
//
// Decoding: quant_tile_decoders_avx2.hpp in signed bytes, with integer scales for q4_K, q5_K and
// q6_K (TilePanel::integer_scales) and float ones for the others. A panel whose values span 127 or
// less (every format but q8_0, iq4_nl and iq4_xs, and those too where a tile's values happen to) is
// then narrowed to unsigned bytes q - low, with low * scale moved into the offsets (or the biases).
//
// Product: vpmaddubsw multiplies unsigned bytes by signed bytes and adds neighbouring pairs into
// saturating 16-bit lanes. Each ymm register holds four values of 8 rows (half of a panel line).
//   - Unsigned panel (bytes <= largest): the bytes go straight in against the column's four
//     activation bytes broadcast (|a| <= 127, as the activation quantizers round). Each 16-bit lane
//     is then at most 2 * largest * 127, so up to 32767 / (254 * largest) of them are added in 16
//     bits (8 for 4-bit values, 2 for 6-bit ones) before one vpmaddwd widens them to 32.
//   - Signed panel: ggml's sign trick, |q| against a with q's sign (vpsignb), widened every step:
//     |q| <= 128 and |a| <= 127 keep each lane within 32512.
// Four columns share each load of the panel. With float scales, vpmaddwd by ones widens, and per
// group of 16 values (32 where the format scales by 32) one multiply by the rows' scales and a
// multiply-add by the column's step close the integer dot, one more adds the offsets. With integer
// scales, vpmaddwd by the rows' scales widens, the whole super-block stays one 32-bit dot, and the
// float work is done once per 256 values, as ggml's k-quant dots do: about a quarter fewer
// instructions per value for q6_K, whose scales go by 16.
#include <immintrin.h>

#include <algorithm>

#include "core/status.hpp"
#include "cpu_kernels/quant_tile_decoders_avx2.hpp"
#include "cpu_kernels/quant_tiles.hpp"

namespace xb::cpu_kernels {

namespace {

// A signed panel whose bytes span 127 or less becomes unsigned: q - low, and value = scale * q +
// offset = scale * (q - low) + (offset + scale * low); with integer scales, ibias = low * iscale.
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
    if (panel.integer_scales) {
        // Group g's scale sits twice at iscale[(g * kTileRows + r) * 2]; its bias goes to lane g % 2
        // of the pair g / 2 (|low| <= 128 times a k-quant scale fits 16 bits).
        for (int64_t g = 0; g < k / kTileGroup; ++g) {
            for (int r = 0; r < kTileRows; ++r) {
                panel.ibias[((g / 2) * kTileRows + r) * 2 + g % 2] =
                    static_cast<int16_t>(low * panel.iscale[(g * kTileRows + r) * 2]);
            }
        }
        panel.has_bias = true;
        return;
    }
    const __m256 by = _mm256_set1_ps(static_cast<float>(low));
    for (int64_t i = 0; i < k / kTileGroup * kTileRows; i += 8) {
        _mm256_store_ps(panel.offset + i, _mm256_fmadd_ps(_mm256_load_ps(panel.scale + i), by, _mm256_load_ps(panel.offset + i)));
    }
}

// The formats with integer scales (q4_K, q5_K, q6_K) decode to them; the others to float scales.
template <typename Block>
struct NarrowedPanel {
    static void decode(const std::byte* rows, size_t row_stride, int nrows, int64_t k, TilePanel& panel) {
        int low = 0, high = 0;
        constexpr bool kInteger = kHasIntegerScales<Block>;
        decode_panel_bytes<Block, TilePanel::Encoding::Signed, kInteger>(rows, row_stride, nrows, k, panel, low, high);
        narrow_panel(panel, k, low, high);
        if constexpr (kInteger) {
            // Their units span 16, 32 or 64 values, always narrowed: the integer kernel takes
            // unsigned bytes only.
            XB_CHECK(panel.encoding == TilePanel::Encoding::Unsigned);
        } else {
            set_panel_kind(panel, k);
        }
    }
};

constexpr int kPassColumns = 4;
constexpr int kHalfRows = 8;
constexpr int64_t kLine = 4 * kTileRows;  // panel bytes per 4 values of every row

// The integer dots of one scale group (kSteps steps of 4 values from w_group, the panel's half
// already chosen) with four columns (their group's values from `a`, kTileGroup bytes per column,
// the next group kTileColumns columns on), each vpmaddwd'd by `multiplier` and added to dot[j]:
// kSums vpmaddubsw results are added in 16 bits per widening (0: a signed panel, sign trick,
// widened every step).
// The vpmaddubsw of step s (values 4 (s % 4) .. of group s / 4) of column j: the panel's bytes w
// against the column's four values broadcast (signed panels: |w| against them with w's signs).
template <bool kSigned>
[[gnu::always_inline]] inline __m256i step_product(__m256i w, const int8_t* a, int s, int j) {
    const int8_t* values = a + ((s / 4) * kTileColumns + j) * kTileGroup + 4 * (s % 4);
    const __m256i x = _mm256_set1_epi32(static_cast<int>(load_le32(reinterpret_cast<const uint8_t*>(values))));
    if constexpr (kSigned) return _mm256_maddubs_epi16(_mm256_sign_epi8(w, w), _mm256_sign_epi8(x, w));
    return _mm256_maddubs_epi16(w, x);
}

template <int kSums, int kSteps>
[[gnu::always_inline]] inline void scale_group_dots(const uint8_t* w_group, const int8_t* a, __m256i multiplier,
                                                    __m256i (&dot)[kPassColumns]) {
    constexpr bool kSigned = kSums == 0;
    constexpr int kChunk = kSigned ? 1 : kSums;  // steps added in 16 bits
    static_assert(kSteps % kChunk == 0);
    // Fully unrolled (the step and column are constants in every address).
#pragma GCC unroll 8
    for (int s0 = 0; s0 < kSteps; s0 += kChunk) {
        if constexpr (kChunk <= 4) {
            // The chunk's weights stay in registers while each column's products are added in
            // one chain: kChunk + 8 registers live besides the accumulators.
            __m256i w[kChunk];
#pragma GCC unroll 4
            for (int t = 0; t < kChunk; ++t) w[t] = _mm256_load_si256(reinterpret_cast<const __m256i*>(w_group + (s0 + t) * kLine));
#pragma GCC unroll 4
            for (int j = 0; j < kPassColumns; ++j) {
                __m256i sum = _mm256_setzero_si256();
#pragma GCC unroll 4
                for (int t = 0; t < kChunk; ++t) {
                    const __m256i p = step_product<kSigned>(w[t], a, s0 + t, j);
                    sum = t == 0 ? p : _mm256_add_epi16(sum, p);
                }
                dot[j] = _mm256_add_epi32(dot[j], _mm256_madd_epi16(sum, multiplier));
            }
        } else {
            // Eight weight registers would not leave room for the accumulators: one weight
            // register at a time, the four columns' sums side by side.
            __m256i sums[kPassColumns];
#pragma GCC unroll 8
            for (int t = 0; t < kChunk; ++t) {
                const __m256i w = _mm256_load_si256(reinterpret_cast<const __m256i*>(w_group + (s0 + t) * kLine));
#pragma GCC unroll 4
                for (int j = 0; j < kPassColumns; ++j) {
                    const __m256i p = step_product<kSigned>(w, a, s0 + t, j);
                    sums[j] = t == 0 ? p : _mm256_add_epi16(sums[j], p);
                    // Keeps the additions a chain in this order: GCC otherwise re-associates them
                    // into a tree, holding every step's product at once, and spills 16 registers
                    // to the stack (75 stack accesses in the q4_K kernel against 35 with this).
                    __asm__("" : "+x"(sums[j]));
                }
            }
#pragma GCC unroll 4
            for (int j = 0; j < kPassColumns; ++j) dot[j] = _mm256_add_epi32(dot[j], _mm256_madd_epi16(sums[j], multiplier));
        }
    }
}

// Stores the half's first `rows` rows of columns [0, ncols) of acc.
void store_pass(const __m256 (&acc)[kPassColumns], int half, int ncols, int rows, float* out, size_t out_stride) {
    const __m256i lanes = _mm256_setr_epi32(0, 1, 2, 3, 4, 5, 6, 7);
    const __m256i mask = _mm256_cmpgt_epi32(_mm256_set1_epi32(rows), lanes);
    for (int j = 0; j < std::min(ncols, kPassColumns); ++j) {
        _mm256_maskstore_ps(out + static_cast<size_t>(j) * out_stride + kHalfRows * half, mask, acc[j]);
    }
}

// Four columns from `first` against one half of the panel (rows 8 * half ..), float scales: one
// per group of 16 values or, with kPairs, per 32. Stores columns [0, ncols) and the half's first
// `rows` rows. Kept out of line (as the integer one): each variant is then one function in profiles
// and disassembly, and a call per pass costs nothing against its k / 4 steps.
template <int kSums, bool kOffsets, bool kPairs>
[[gnu::noinline]] void product_pass(const TilePanel& panel, const TileColumns& columns, int64_t first, int half,
                                    int ncols, int rows, float* out, size_t out_stride) {
    constexpr int kSteps = kPairs ? 8 : 4;       // steps of 4 values per scale
    constexpr int64_t kGroups = kPairs ? 2 : 1;  // groups of 16 values per scale
    const __m256i ones = _mm256_set1_epi16(1);
    const uint8_t* weights = panel.q + kHalfRows * 4 * half;
    __m256 acc[kPassColumns];
    for (auto& a : acc) a = _mm256_setzero_ps();
    for (int64_t g = 0; g < columns.groups(); g += kGroups) {
        const int64_t at = columns.at(g, first);
        __m256i dot[kPassColumns];
        for (auto& d : dot) d = _mm256_setzero_si256();
        scale_group_dots<kSums, kSteps>(weights + 4 * g * kLine, columns.q + at * kTileGroup, ones, dot);
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
    store_pass(acc, half, ncols, rows, out, out_stride);
}

// The same with integer scales (TilePanel::integer_scales; q8_K activations, one step per column
// and super-block): each scale group's dots vpmaddwd'd by the rows' integer scales into one 32-bit
// dot per super-block, the biases and minima against the column's pair sums, then two float
// multiply-adds per super-block. Bounds, with the k-quants' scales within +-128: sixteen groups of
// 2 x 32767 x 128, and eight pairs of biases of 2 x (128 x 128) x (16 x 127), are below 2^31.
template <int kSums, bool kPairs>
[[gnu::noinline]] void product_pass_integer(const TilePanel& panel, const TileColumns& columns, int64_t first,
                                            int half, int ncols, int rows, float* out, size_t out_stride) {
    constexpr int kSteps = kPairs ? 8 : 4;
    constexpr int64_t kGroups = kPairs ? 2 : 1;
    constexpr int64_t kSuperGroups = kQKK / kTileGroup;
    const uint8_t* weights = panel.q + kHalfRows * 4 * half;
    const auto vector_at = [half](const int16_t* array, int64_t index) {
        return _mm256_load_si256(reinterpret_cast<const __m256i*>(array + (index * kTileRows + kHalfRows * half) * 2));
    };
    __m256 acc[kPassColumns];
    for (auto& a : acc) a = _mm256_setzero_ps();
    for (int64_t g0 = 0; g0 < columns.groups(); g0 += kSuperGroups) {
        __m256i dot[kPassColumns];
        for (auto& d : dot) d = _mm256_setzero_si256();
        for (int64_t g = g0; g < g0 + kSuperGroups; g += kGroups) {
            const int8_t* a = columns.q + columns.at(g, first) * kTileGroup;
            scale_group_dots<kSums, kSteps>(weights + 4 * g * kLine, a, vector_at(panel.iscale, g), dot);
        }
        __m256i mins[kPassColumns];
        for (auto& m : mins) m = _mm256_setzero_si256();
        if (panel.has_bias || panel.has_mins) {
            for (int64_t p = g0 / 2; p < (g0 + kSuperGroups) / 2; ++p) {
                const uint32_t* sums = columns.pair_sums16 + columns.pair_at(p, first);
                const __m256i bias = vector_at(panel.ibias, p), min = vector_at(panel.imin, p);
                for (int j = 0; j < kPassColumns; ++j) {
                    const __m256i pair = _mm256_set1_epi32(static_cast<int>(sums[j]));
                    if (panel.has_bias) dot[j] = _mm256_add_epi32(dot[j], _mm256_madd_epi16(bias, pair));
                    if (panel.has_mins) mins[j] = _mm256_add_epi32(mins[j], _mm256_madd_epi16(min, pair));
                }
            }
        }
        const int64_t super = g0 / kSuperGroups;
        const __m256 scale = _mm256_load_ps(panel.super_scale + super * kTileRows + kHalfRows * half);
        const __m256 min = _mm256_load_ps(panel.super_min + super * kTileRows + kHalfRows * half);
        const float* d = columns.d + columns.at(g0, first);
        for (int j = 0; j < kPassColumns; ++j) {
            const __m256 step = _mm256_broadcast_ss(d + j);
            acc[j] = _mm256_fmadd_ps(_mm256_mul_ps(_mm256_cvtepi32_ps(dot[j]), scale), step, acc[j]);
            if (panel.has_mins) acc[j] = _mm256_fmadd_ps(_mm256_mul_ps(_mm256_cvtepi32_ps(mins[j]), min), step, acc[j]);
        }
    }
    store_pass(acc, half, ncols, rows, out, out_stride);
}

// Every pass of four columns and eight rows.
template <typename Pass>
void for_each_pass(int ncols, int nrows, float* out, size_t out_stride, Pass pass) {
    // The columns are padded with zeros to whole blocks of kTileColumns (a multiple of four), so
    // every pass reads four.
    for (int j = 0; j < ncols; j += kPassColumns) {
        float* at = out + static_cast<size_t>(j) * out_stride;
        for (int half = 0; half * kHalfRows < nrows; ++half) pass(j, half, std::min(kHalfRows, nrows - half * kHalfRows), at);
    }
}

template <int kSums, bool kOffsets, bool kPairs>
void product_variant(const TilePanel& panel, const TileColumns& columns, int64_t first, int ncols, int nrows, float* out,
                     size_t out_stride) {
    for_each_pass(ncols, nrows, out, out_stride, [&](int j, int half, int rows, float* at) {
        product_pass<kSums, kOffsets, kPairs>(panel, columns, first + j, half, ncols - j, rows, at, out_stride);
    });
}

template <int kSums, bool kPairs>
void product_integer(const TilePanel& panel, const TileColumns& columns, int64_t first, int ncols, int nrows, float* out,
                     size_t out_stride) {
    for_each_pass(ncols, nrows, out, out_stride, [&](int j, int half, int rows, float* at) {
        product_pass_integer<kSums, kPairs>(panel, columns, first + j, half, ncols - j, rows, at, out_stride);
    });
}

template <int kSums>
void product_sums(const TilePanel& panel, const TileColumns& columns, int64_t first, int ncols, int nrows, float* out,
                  size_t out_stride) {
    // A scale every 16 values: at most four steps between widenings.
    constexpr int kSums16 = std::min(kSums, 4);
    if constexpr (kSums > 0) {
        if (panel.integer_scales) {
            if (panel.pairs) return product_integer<kSums, true>(panel, columns, first, ncols, nrows, out, out_stride);
            return product_integer<kSums16, false>(panel, columns, first, ncols, nrows, out, out_stride);
        }
    }
    if (panel.pairs) {
        if (panel.has_offsets) return product_variant<kSums, true, true>(panel, columns, first, ncols, nrows, out, out_stride);
        return product_variant<kSums, false, true>(panel, columns, first, ncols, nrows, out, out_stride);
    }
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
