// The kernels of cpu_kernels/matmul_tiles.hpp written once over a vector type; each
// matmul_tiles_<isa>.cpp defines its Vec (zero, load, store, broadcast, add, fma, sum4 of four
// vectors) and a panel packing function, and includes this.
// Not a public header: only those translation units, compiled for their ISA, may include it.
// Everything is in an anonymous namespace, so that each includes its own copy, compiled for its
// set: an out-of-line copy with external linkage could be the one the linker keeps for all of them.
#pragma once

#include <array>
#include <utility>

#include "cpu_kernels/matmul_tiles.hpp"
#include "cpu_kernels/tile_prefetch.hpp"

namespace xb::cpu_kernels::matmul_impl {
namespace {

template <class Vec, int NR>
void dot_tile(const float* const* a, const float* const* b, int64_t len, MatmulTile& out) {
    typename Vec::T acc[kTileRows][NR];
#pragma GCC unroll 8
    for (int i = 0; i < kTileRows; ++i) {
#pragma GCC unroll 8
        for (int j = 0; j < NR; ++j) acc[i][j] = Vec::zero();
    }
    for (int64_t k = 0; k < len; k += Vec::kWidth) {
        typename Vec::T bv[NR];
#pragma GCC unroll 8
        for (int j = 0; j < NR; ++j) bv[j] = Vec::load(b[j] + k);
#pragma GCC unroll 8
        for (int i = 0; i < kTileRows; ++i) {
            const typename Vec::T av = Vec::load(a[i] + k);
#pragma GCC unroll 8
            for (int j = 0; j < NR; ++j) acc[i][j] = Vec::fma(av, bv[j], acc[i][j]);
        }
    }
#pragma GCC unroll 8
    for (int j = 0; j < NR; ++j) Vec::sum4(acc[0][j], acc[1][j], acc[2][j], acc[3][j], out[j]);
}

// The outer-product tile (GemmKernel::tile) of kVecs vectors of a by kNr columns of b.
template <class Vec, int kVecs, int kNr>
void outer_tile(int64_t kc, const float* a, const float* b, float* c, int64_t ldc, bool accumulate, const TilePrefetch& ahead) {
    constexpr int kMr = kVecs * Vec::kWidth;
    typename Vec::T acc[kNr][kVecs];
#pragma GCC unroll 16
    for (int j = 0; j < kNr; ++j) {
        // dst is far from the caches (one tile per kc products): its lines arrive during the loop.
        __builtin_prefetch(c + j * ldc, 1);
        __builtin_prefetch(c + j * ldc + kMr - 1, 1);
#pragma GCC unroll 4
        for (int v = 0; v < kVecs; ++v) acc[j][v] = Vec::zero();
    }
    SpreadPrefetch<> prefetch(ahead, kc);
    for (int64_t k = 0; k < kc; ++k, a += kMr, b += kNr) {
        prefetch.step();
        typename Vec::T av[kVecs];
#pragma GCC unroll 4
        for (int v = 0; v < kVecs; ++v) av[v] = Vec::load(a + v * Vec::kWidth);
#pragma GCC unroll 16
        for (int j = 0; j < kNr; ++j) {
            const typename Vec::T bj = Vec::broadcast(b + j);
#pragma GCC unroll 4
            for (int v = 0; v < kVecs; ++v) acc[j][v] = Vec::fma(av[v], bj, acc[j][v]);
        }
    }
#pragma GCC unroll 16
    for (int j = 0; j < kNr; ++j) {
#pragma GCC unroll 4
        for (int v = 0; v < kVecs; ++v) {
            float* out = c + j * ldc + v * Vec::kWidth;
            Vec::store(out, accumulate ? Vec::add(Vec::load(out), acc[j][v]) : acc[j][v]);
        }
    }
}

// The packing every ISA can run, element by element.
inline void pack_panel_scalar(const float* const* src, int rows, int64_t len, float* out) {
    for (int64_t k = 0; k < len; ++k) {
        for (int i = 0; i < rows; ++i) out[k * rows + i] = src[i][k];
    }
}

// The table for Vec with dot tiles of 1..kCols columns and an outer-product tile of kGemmVecs
// vectors by kGemmNr columns, packing panels with `pack`.
template <class Vec, int kCols, int kGemmVecs, int kGemmNr, size_t... I>
constexpr MatmulTiles make_tiles(Isa isa, GemmPackers pack, std::index_sequence<I...>) {
    static_assert(kCols <= kMaxTileCols && Vec::kWidth <= kMaxVectorWidth);
    static_assert(kGemmVecs * Vec::kWidth <= kMaxPanelRows && kGemmNr <= kMaxPanelRows);
    return MatmulTiles{isa,
                       Vec::kWidth,
                       kCols,
                       {&dot_tile<Vec, static_cast<int>(I) + 1>...},
                       {kGemmVecs * Vec::kWidth, kGemmNr, &outer_tile<Vec, kGemmVecs, kGemmNr>, pack}};
}
template <class Vec, int kCols, int kGemmVecs, int kGemmNr>
constexpr MatmulTiles make_tiles(Isa isa, GemmPackers pack) {
    return make_tiles<Vec, kCols, kGemmVecs, kGemmNr>(isa, pack, std::make_index_sequence<kCols>{});
}

}  // namespace
}  // namespace xb::cpu_kernels::matmul_impl
