#include "host/matmul_tiles.hpp"

#include "core/status.hpp"

namespace xb::host {

const MatmulTiles& matmul_tiles(Isa isa) {
    XB_CHECK_MSG(isa_supported(isa), "matmul_tiles: this CPU does not run that instruction set");
    switch (isa) {
        case Isa::Scalar: return matmul_tiles_scalar();
        case Isa::Avx2: return matmul_tiles_avx2();
        case Isa::Avx512: return matmul_tiles_avx512();
    }
    return matmul_tiles_scalar();
}

const MatmulTiles& matmul_tiles() {
    static const MatmulTiles& active = matmul_tiles(active_isa());
    return active;
}

}  // namespace xb::host
