#include "cpu_kernels/matmul_tiles.hpp"

#include <algorithm>
#include <cstring>


namespace xb::cpu_kernels {

const MatmulTiles& matmul_tiles(Isa isa) {
    return table_for_isa(isa, "matmul_tiles", &matmul_tiles_scalar, &matmul_tiles_avx2, &matmul_tiles_avx512);
}

const MatmulTiles& matmul_tiles() {
    static const MatmulTiles& active = matmul_tiles(active_isa());
    return active;
}

void tile_dots(const float* const* a, int64_t na, const float* const* b, int64_t nb, int64_t len, float* out,
               int64_t out_stride) {
    const MatmulTiles& table = matmul_tiles();
    MatmulTile tile;
    for (int64_t i0 = 0; i0 < na; i0 += kTileRows) {
        const int64_t mr = std::min<int64_t>(kTileRows, na - i0);
        const float* rows[kTileRows];
        for (int64_t i = 0; i < kTileRows; ++i) rows[i] = a[i0 + std::min(i, mr - 1)];  // past the end: a repeat
        for (int64_t j0 = 0; j0 < nb; j0 += table.cols) {
            const int64_t nr = std::min<int64_t>(table.cols, nb - j0);
            table.tile[nr - 1](rows, b + j0, len, tile);
            for (int64_t j = 0; j < nr; ++j) {
                for (int64_t i = 0; i < mr; ++i) out[(j0 + j) * out_stride + i0 + i] = tile[j][i];
            }
        }
    }
}

bool f32_rows_in_place(const Tensor& t) {
    return t.type == DType::F32 && t.nb[0] == sizeof(float) && t.view_offs % sizeof(float) == 0 &&
           t.nb[1] % sizeof(float) == 0 && t.nb[2] % sizeof(float) == 0 && t.nb[3] % sizeof(float) == 0;
}

void load_row_f32(DType t, const std::byte* src, size_t stride, int64_t n, int64_t padded, float* dst) {
    if (stride == type_size(t) && t == DType::F32) {
        std::memcpy(dst, src, static_cast<size_t>(n) * sizeof(float));
    } else if (stride == type_size(t) && t == DType::F16) {
        f16_to_f32_row(reinterpret_cast<const uint16_t*>(src), dst, n);
    } else if (stride == type_size(t) && t == DType::BF16) {
        bf16_to_f32_row(reinterpret_cast<const uint16_t*>(src), dst, n);
    } else {
        for (int64_t i = 0; i < n; ++i) dst[i] = load_as_f32(t, src + static_cast<size_t>(i) * stride);
    }
    std::fill(dst + n, dst + padded, 0.0f);
}

}  // namespace xb::cpu_kernels
