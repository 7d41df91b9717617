// The register-blocked dot-product tiles of the CPU's f32 mul_mat (kernels_matmul.cpp): kTileRows
// rows of a against up to `cols` columns of b, accumulated in vector registers. One table per
// instruction set, each in its own translation unit compiled for that ISA only
// (matmul_tiles_<isa>.cpp), so that one binary runs on any x86-64 CPU and uses the best it has.
#pragma once

#include <cstdint>

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

// Per instruction set (matmul_tiles_<isa>.cpp).
const MatmulTiles& matmul_tiles_scalar();
const MatmulTiles& matmul_tiles_avx2();
const MatmulTiles& matmul_tiles_avx512();

}  // namespace xb::host
