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
#include "cpu_kernels/tile_prefetch.hpp"

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

// The packers of GemmKernel's panels, one per row element type: out[k * rows + i] = src[i][k] as
// floats (f16 and bf16 widened exactly) for k < len, i < rows (rows <= kMaxPanelRows), the panel
// layout the tile reads, for a (rows = mr) and b (rows = nr). Nothing past out[len * rows] is
// written: threads pack neighbouring panels. f16 and bf16 rows are converted as they are packed,
// with no f32 copy between.
struct GemmPackers {
    void (*f32)(const float* const* src, int rows, int64_t len, float* out);
    void (*f16)(const uint16_t* const* src, int rows, int64_t len, float* out);
    void (*bf16)(const uint16_t* const* src, int rows, int64_t len, float* out);
};

struct GemmKernel {
    int mr;  // rows of a per tile: a multiple of the vector width
    int nr;  // columns of b per tile
    // c[i + j * ldc] = (accumulate ? c[i + j * ldc] : 0) + sum_k a[k * mr + i] * b[k * nr + j]
    // for i < mr, j < nr, k < kc; asking for `ahead`'s lines as it goes.
    void (*tile)(int64_t kc, const float* a, const float* b, float* c, int64_t ldc, bool accumulate,
                 const TilePrefetch& ahead);
    GemmPackers pack;
};

// The outer-product tile of bf16 weights on CPUs with AVX512-BF16 (vdpbf16ps: 32 products of bf16
// pairs summed into 16 f32 lanes per instruction, twice the f32 FMA's rate), as ggml's CPU computes
// bf16 products: the activations rounded to bf16 (to nearest even), every sum in f32. Panels hold
// 4-byte cells, one bf16 pair (elements 2p, 2p + 1 of a row, the low half first) each.
struct Bf16GemmKernel {
    int mr;  // rows of a per tile
    int nr;  // columns of b per tile
    // c[i + j * ldc] = (accumulate ? c[i + j * ldc] : 0) + sum over cells p < pairs of the pair of
    // a[p * mr + i] times the pair of b[p * nr + j], for i < mr, j < nr; asking for `ahead`'s lines
    // as it goes.
    void (*tile)(int64_t pairs, const uint32_t* a, const uint32_t* b, float* c, int64_t ldc, bool accumulate,
                 const TilePrefetch& ahead);
    // out[p * rows + i] = (src[i][2p], src[i][2p + 1]) for p < ceil(len / 2), i < rows (rows <=
    // kMaxPanelRows), the second half 0 past len: the panel layout of tile, for a (rows = mr) and b
    // (rows = nr). Rows need no alignment; nothing past out[ceil(len / 2) * rows] is written.
    void (*pack)(const uint16_t* const* src, int rows, int64_t len, uint32_t* out);
    // The one-token product: out[r] = sum_e q[e] * row r[e] for r < rows (1 <= rows <= 8), the rows
    // of n bf16 elements `stride` bytes apart from `first`, q the activations rounded to bf16; one
    // pass over q for all the rows.
    void (*dot_rows)(const uint16_t* q, const std::byte* first, size_t stride, int64_t n, int rows, float* out);
};

// The bf16 kernels where this CPU has AVX512-BF16 and the active instruction set is AVX-512; null
// elsewhere (bf16 weights then go through the f32 tile and the row kernels, their activations kept
// in f32).
const Bf16GemmKernel* bf16_gemm_kernel();
// What bf16 products use, for the CPU device's description.
const char* bf16_products_description();
// The AVX512-BF16 kernel itself (matmul_bf16_avx512.cpp); call only where the CPU has it.
const Bf16GemmKernel& bf16_gemm_avx512();

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

// True when t's rows can be read in place as floats: f32, elements packed, every row 4-byte aligned.
bool f32_rows_in_place(const Tensor& t);

// Packs `count` rows of packed `type` elements (each pointer at the row's first element to pack)
// with the packer of their type, converting as it goes; false, with nothing written, where there is
// none (not f32, f16 or bf16, or a row not aligned to its element): the caller converts them to f32
// rows first.
bool pack_typed_rows(const GemmPackers& pack, DType type, const std::byte* const* rows, int count, int64_t len, float* out);

// n elements of type t (a float type), `stride` bytes apart, as f32 into dst[0, n); dst[n, padded)
// = 0: rows made ready for the tiles.
void load_row_f32(DType t, const std::byte* src, size_t stride, int64_t n, int64_t padded, float* dst);

// Per instruction set (matmul_tiles_<isa>.cpp).
const MatmulTiles& matmul_tiles_scalar();
const MatmulTiles& matmul_tiles_avx2();
const MatmulTiles& matmul_tiles_avx512();

}  // namespace xb::cpu_kernels
