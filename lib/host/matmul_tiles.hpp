// The register-blocked dot-product tiles of the CPU's f32 mul_mat (kernels_matmul.cpp): kTileRows
// rows of a against up to `cols` columns of b, accumulated in vector registers. One table per
// instruction set, each in its own translation unit compiled for that ISA only
// (matmul_tiles_<isa>.cpp), so that one binary runs on any x86-64 CPU and uses the best it has.
#pragma once

#include <cstdint>

#include "core/dtype.hpp"
#include "core/isa.hpp"

namespace xb::host {

// Rows of a per tile: the tiles reduce one column of kTileRows accumulators at a time.
constexpr int kTileRows = 4;
// The most columns of b any ISA's tile takes, and the widest vector (floats): rows handed to a
// tile are padded to a multiple of the table's width.
constexpr int kMaxTileCols = 6;
constexpr int kMaxVectorWidth = 16;

// out[j][i] = dot(row i of a, column j of b) over k in [0, len), len a multiple of the width.
using MatmulTile = float[kMaxTileCols][kTileRows];
using MatmulTileFn = void (*)(const float* const* a, const float* const* b, int64_t len, MatmulTile& out);

struct MatmulTiles {
    Isa isa;
    int width;  // floats per vector register
    int cols;   // columns of b per full tile (the register budget's choice)
    MatmulTileFn tile[kMaxTileCols];  // tile[c - 1] takes c columns, for c in [1, cols]
};

// The table of `isa` (which this CPU must support, see isa_supported), and that of active_isa().
const MatmulTiles& matmul_tiles(Isa isa);
const MatmulTiles& matmul_tiles();

// out[j * out_stride + i] = dot(a[i], b[j]) over len floats for i < na, j < nb, through the
// active table's tiles; len is a multiple of its width (callers pad rows with zeros).
void tile_dots(const float* const* a, int64_t na, const float* const* b, int64_t nb, int64_t len, float* out,
               int64_t out_stride);

// n elements of type t (a float type), `stride` bytes apart, as f32 into dst[0, n); dst[n, padded)
// = 0: rows made ready for the tiles.
void load_row_f32(DType t, const std::byte* src, size_t stride, int64_t n, int64_t padded, float* dst);

// Per instruction set (matmul_tiles_<isa>.cpp).
const MatmulTiles& matmul_tiles_scalar();
const MatmulTiles& matmul_tiles_avx2();
const MatmulTiles& matmul_tiles_avx512();

}  // namespace xb::host
