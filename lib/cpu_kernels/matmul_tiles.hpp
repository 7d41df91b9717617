// The register-blocked kernels of the CPU's f32 matrix products, one table per instruction set,
// each in its own translation unit compiled for that ISA only (matmul_tiles_<isa>.cpp), so that
// one binary runs on any x86-64 CPU and uses the best it has:
// - dot-product tiles (kernels_matmul.cpp for few columns of b, flash attention): kTileRows rows of
//   a against up to `cols` columns of b, read in place, accumulated along K in vector registers;
// - an outer-product micro-kernel (kernels_matmul_packed.cpp for many columns): one mr x nr tile
//   of dst from two packed panels. For every k it loads mr consecutive floats of a (mr rows at that
//   k) as whole vectors and broadcasts nr floats of b: mr * nr fused multiply-adds on registers
//   that stay put, with no horizontal sums, which lets it run at the FMA units' peak.
#pragma once

#include <cstdint>

#include "core/dtype.hpp"
#include "core/isa.hpp"
#include "core/tensor.hpp"

namespace xb::cpu_kernels {

// Rows of a per tile: the tiles reduce one column of kTileRows accumulators at a time.
constexpr int kTileRows = 4;
// The most columns of b any ISA's tile takes, and the widest vector (floats): rows handed to a
// tile are padded to a multiple of the table's width.
constexpr int kMaxTileCols = 6;
constexpr int kMaxVectorWidth = 16;

// out[j][i] = dot(row i of a, column j of b) over k in [0, len), len a multiple of the width.
using MatmulTile = float[kMaxTileCols][kTileRows];
using MatmulTileFn = void (*)(const float* const* a, const float* const* b, int64_t len, MatmulTile& out);

// The most rows any table packs into one panel (AVX-512's mr).
constexpr int kMaxPanelRows = 32;

struct GemmKernel {
    int mr;  // rows of a per tile: a multiple of the vector width
    int nr;  // columns of b per tile
    // c[i + j * ldc] = (accumulate ? c[i + j * ldc] : 0) + sum_k a[k * mr + i] * b[k * nr + j]
    // for i < mr, j < nr, k < kc.
    void (*tile)(int64_t kc, const float* a, const float* b, float* c, int64_t ldc, bool accumulate);
    // out[k * rows + i] = src[i][k] for k < len, i < rows (rows <= kMaxPanelRows): the panel layout
    // the tile reads, for a (rows = mr) and b (rows = nr). Nothing past out[len * rows] is written:
    // threads pack neighbouring panels.
    void (*pack)(const float* const* src, int rows, int64_t len, float* out);
};

struct MatmulTiles {
    Isa isa;
    int width;  // floats per vector register
    int cols;   // columns of b per full tile (the register budget's choice)
    MatmulTileFn tile[kMaxTileCols];  // tile[c - 1] takes c columns, for c in [1, cols]
    GemmKernel gemm;
};

// The table of `isa` (which this CPU must support, see isa_supported), and that of active_isa().
const MatmulTiles& matmul_tiles(Isa isa);
const MatmulTiles& matmul_tiles();

// out[j * out_stride + i] = dot(a[i], b[j]) over len floats for i < na, j < nb, through the
// active table's tiles; len is a multiple of its width (callers pad rows with zeros).
void tile_dots(const float* const* a, int64_t na, const float* const* b, int64_t nb, int64_t len, float* out,
               int64_t out_stride);

// True when t's rows can be read in place as floats: f32, elements packed, every row 4-byte aligned.
bool f32_rows_in_place(const Tensor& t);

// n elements of type t (a float type), `stride` bytes apart, as f32 into dst[0, n); dst[n, padded)
// = 0: rows made ready for the tiles.
void load_row_f32(DType t, const std::byte* src, size_t stride, int64_t n, int64_t padded, float* dst);

// Per instruction set (matmul_tiles_<isa>.cpp).
const MatmulTiles& matmul_tiles_scalar();
const MatmulTiles& matmul_tiles_avx2();
const MatmulTiles& matmul_tiles_avx512();

}  // namespace xb::cpu_kernels
