// The tile kernel of host/matmul_tiles.hpp written once over a vector type; each
// matmul_tiles_<isa>.cpp defines its Vec (zero, load, fma, sum4 of four vectors) and includes this.
// Not a public header: only those translation units, compiled for their ISA, may include it.
#pragma once

#include <array>
#include <utility>

#include "host/matmul_tiles.hpp"

namespace xb::host::matmul_impl {

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

// The table for Vec with tiles of 1..kCols columns.
template <class Vec, int kCols, size_t... I>
constexpr MatmulTiles make_tiles(Isa isa, std::index_sequence<I...>) {
    static_assert(kCols <= kMaxTileCols && Vec::kWidth <= kMaxVectorWidth);
    return MatmulTiles{isa, Vec::kWidth, kCols, {&dot_tile<Vec, static_cast<int>(I) + 1>...}};
}
template <class Vec, int kCols>
constexpr MatmulTiles make_tiles(Isa isa) {
    return make_tiles<Vec, kCols>(isa, std::make_index_sequence<kCols>{});
}

}  // namespace xb::host::matmul_impl
