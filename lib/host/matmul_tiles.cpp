#include "host/matmul_tiles.hpp"

namespace xb::host {

const MatmulTiles& matmul_tiles(Isa isa) {
    return table_for_isa(isa, "matmul_tiles", &matmul_tiles_scalar, &matmul_tiles_avx2, &matmul_tiles_avx512);
}

const MatmulTiles& matmul_tiles() {
    static const MatmulTiles& active = matmul_tiles(active_isa());
    return active;
}

}  // namespace xb::host
