// Quantized products at batch sizes where decoding each weight row once per few columns costs more
// than the products themselves (prefill): tiles of kTileRows weight rows are decoded once per
// product into an int8 panel, and a tile kernel multiplies the panel with every column of 8-bit
// activations in integer arithmetic, as ggml's tiled CPU products and llama.cpp's repacked weights
// do. Two tables: AVX-512 VNNI (vpdpbusd, 16 rows by 4 values per instruction) and AVX2 (vpmaddubsw,
// 8 rows by 4 values).
//
// Every quantized type goes through its 32-value units (core/quant_unit.hpp: value ~ scale[h] * q +
// offset[h] for each half h of 16 values), so one kernel per table serves all of them:
//   - the panel holds each unit's q as bytes (TilePanel::Encoding says how), interleaved so that one
//     64-byte line holds four consecutive values of all 16 rows, and the scale and offset of each
//     group of 16 values for each row;
//   - the activations hold, per column and group of 16, their step d, 128 x the sum of their q's
//     (which takes a +128 back out, exactly, in integers) and d x that sum (for the offsets).
// Then sum_e value_e * x_e = sum over groups of d * scale * dot(q, a) + offset * d * sum(a): the
// weights' scales are float per group, which every format's are.
//
// CPUs without AVX2 (and XB_CPU_ISA=scalar) have no table: they keep the row dot products of
// quant_dot.hpp.
#pragma once

#include <cstddef>
#include <cstdint>

#include "core/dtype.hpp"
#include "core/q4k_x8.hpp"
#include "cpu_kernels/quant_dot.hpp"

namespace xb::cpu_kernels {

inline constexpr int kTileRows = 16;
inline constexpr int kTileGroup = 16;  // values per scale in the panel and the activations

// One tile of decoded weights: up to kTileRows rows of k values (k a multiple of 32).
struct TilePanel {
    // What the bytes of q hold, for a unit value q:
    enum class Encoding : uint8_t {
        Plus128,   // q + 128, unsigned (AVX-512 VNNI: vpdpbusd takes unsigned weights)
        Signed,    // q (AVX2, where the panel's values span more than 127: q8_0, iq4_nl, iq4_xs)
        Unsigned,  // q - low, 0 .. largest <= 127, with low * scale moved into the offsets (AVX2:
                   // vpmaddubsw takes them as unsigned without saturating, and `largest` bounds how
                   // many of its 16-bit sums can be added before they could overflow)
    };

    uint8_t* q = nullptr;   // [k / 4][kTileRows][4]: values 4c .. 4c + 3 of every row
    float* scale = nullptr;   // [k / 16][kTileRows]
    float* offset = nullptr;  // [k / 16][kTileRows]
    Encoding encoding = Encoding::Plus128;
    int largest = 255;         // the largest byte of q (Unsigned)
    bool has_offsets = false;  // some row's offsets are not all zero (the kernel skips them otherwise)
    bool pairs = false;        // every pair of groups (32 values) shares its scale and offset in every row

    // Integer scales (AVX2, for the k-quants whose scales are integers under one float per 256
    // values: q4_K, q5_K, q6_K), instead of scale and offset: within super-block s, a value is
    //   super_scale[s] * (iscale[g] * q + ibias[g]) + super_min[s] * imin[g]
    // for each row, so that a super-block's dot stays in 32-bit integers and is scaled once (as
    // ggml's k-quant dots do) instead of once per 16 or 32 values. ibias holds low * iscale of an
    // unsigned panel, imin the format's minima. The int16 arrays hold each row's value twice
    // (iscale) or those of groups 2p and 2p + 1 (ibias, imin), as vpmaddwd multiplies pairs.
    bool integer_scales = false;
    bool has_bias = false;  // some ibias is not zero
    bool has_mins = false;  // the format has minima
    int16_t* iscale = nullptr;   // [k / 16][kTileRows][2]
    int16_t* ibias = nullptr;    // [k / 32][kTileRows][2]
    int16_t* imin = nullptr;     // [k / 32][kTileRows][2]
    float* super_scale = nullptr;  // [k / 256][kTileRows]
    float* super_min = nullptr;    // [k / 256][kTileRows]

    static size_t bytes(int64_t k);
    // Lays a panel of k values out in `memory` (bytes(k), 64-byte aligned).
    static TilePanel at(std::byte* memory, int64_t k);
};

// Activation columns for the tile kernel, made from the 8-bit blocks of quant_dot.hpp, in blocks
// of kTileColumns columns that a kernel takes at once: within a block, group by group, the block's
// columns next to each other, so that the kernel reads each array front to back. Columns are those
// of b in row order, each batch's padded to whole blocks (batch_columns of them).
inline constexpr int64_t kTileColumns = 8;

struct TileColumns {
    int8_t* q = nullptr;        // kTileGroup values at q + kTileGroup * at(g, c)
    float* d = nullptr;         // the group's step, at d[at(g, c)]
    // -128 x the group's sum of q: what a dot with weights stored as q + 128 (TilePanel's Plus128)
    // has too much, so the VNNI kernel starts each dot from it.
    int32_t* minus_sum128 = nullptr;
    float* dsum = nullptr;      // d x the group's sum of q
    // The same sums over pairs of groups (32 values) at pair_at(p, c), for panels whose scales go
    // by 32 values.
    int32_t* pair_minus_sum128 = nullptr;
    float* pair_dsum = nullptr;
    // The sums of q of groups 2p and 2p + 1 as two int16 (low half first) at pair_at(p, c), for
    // the minima and biases of panels with integer scales.
    uint32_t* pair_sums16 = nullptr;
    int64_t k = 0;
    ActFormat format = ActFormat::Q8Sum;  // of the activation blocks set_column takes
    int64_t columns = 0;        // per batch
    int64_t batch_columns = 0;  // per batch, padded to whole blocks

    // Always inlined: the AVX-512 kernels call them, and an out-of-line copy compiled there could be
    // the one the linker keeps for every caller (see core/host_device.hpp).
    [[gnu::always_inline]] int64_t groups() const { return k / kTileGroup; }
    // How many consecutive groups share one step d (16 for q8_K's 256 values, 2 for 32), so that
    // a kernel may sum their scaled dots before multiplying by it once.
    [[gnu::always_inline]] int64_t groups_per_step() const { return (format == ActFormat::Q8K ? kQKK : kQK) / kTileGroup; }
    // The padded index of column j of batch `batch`: the kernels' `first`.
    [[gnu::always_inline]] int64_t column(int64_t batch, int64_t j) const { return batch * batch_columns + j; }
    [[gnu::always_inline]] int64_t at(int64_t g, int64_t c) const {
        return ((c / kTileColumns) * groups() + g) * kTileColumns + c % kTileColumns;
    }
    [[gnu::always_inline]] int64_t pair_at(int64_t p, int64_t c) const {
        return ((c / kTileColumns) * (groups() / 2) + p) * kTileColumns + c % kTileColumns;
    }

    static size_t bytes(int64_t k, int64_t columns, int64_t batches);
    // Points at `memory` (bytes(k, columns, batches), 64-byte aligned) for writing with set_column
    // the activations of a product with `weights`.
    static TileColumns at(std::byte* memory, int64_t k, int64_t columns, int64_t batches, DType weights);
    // Row `row` of b (column row % columns of batch row / columns) from its activation blocks
    // (BlockQ8Sum or BlockQ8_K as the weights take them).
    // Whoever sets a batch's last column also zeroes the padding columns after it, so that a
    // kernel may read (and multiply) whole blocks of columns.
    void set_column(int64_t row, const void* blocks) const;
    void clear_padding(int64_t begin, int64_t end) const;
};

struct QuantTiles {
    // Decodes rows [0, nrows) of a weight matrix (row r at rows + r * row_stride, k values) into
    // the panel; rows from nrows to kTileRows get zero scales.
    using DecodeFn = void (*)(const std::byte* rows, size_t row_stride, int nrows, int64_t k, TilePanel& panel);
    // out[c * out_stride + r] = dot(row r, column first + c) for r < nrows, c < ncols; `first` is a
    // multiple of kTileColumns (TileColumns::column of a batch's first column).
    using ProductFn = void (*)(const TilePanel& panel, const TileColumns& columns, int64_t first, int ncols, int nrows,
                               float* out, size_t out_stride);

    // The panel of a tile stored as 8-row q4_K groups (core/q4k_x8.hpp): `first` holds rows 0-7,
    // `second` rows 8-15 (nullptr: a tile of 8 rows); the same panel decode[Q4_K] makes of the rows.
    using DecodeQ4KX8Fn = void (*)(const BlockQ4_Kx8* first, const BlockQ4_Kx8* second, int64_t k, TilePanel& panel);

    DecodeFn decode[kDTypeCount];  // nullptr for the types without one
    DecodeQ4KX8Fn decode_q4_K_x8;  // nullptr where the table has none (its groups go back to rows first)
    ProductFn product;
};

// Whether this CPU runs the AVX-512 VNNI table.
bool tiles_avx512_supported();
// The table of this CPU: AVX-512 VNNI where it has it and XB_CPU_ISA allows, else AVX2 where the
// active set is AVX2 or more; nullptr with the scalar set.
const QuantTiles* quant_tiles();
// The AVX-512 VNNI table (quant_tiles_avx512.cpp); only on CPUs that have it.
const QuantTiles& quant_tiles_avx512();
// The AVX2 table (quant_tiles_avx2.cpp); only on CPUs that have AVX2.
const QuantTiles& quant_tiles_avx2();

}  // namespace xb::cpu_kernels
