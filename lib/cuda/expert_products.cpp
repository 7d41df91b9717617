#include "cuda/expert_products.hpp"

#include <limits>

#include "core/quant_block_types.hpp"
#include "cuda/gemm_plan.hpp"
#include "cuda/launch_config.hpp"

namespace xb::cuda {

ExpertProductPlan plan_expert_product(const Tensor& dst) {
    const Tensor& as = *dst.src[0];
    const Tensor& ids = *dst.src[2];
    ExpertProductPlan p;
    p.experts = as.ne[2];
    p.pairs = ids.ne[0] * ids.ne[1];
    const bool quantized_kernels = with_block_type(as.type, [](auto) { return true; }, false);
    if (!quantized_kernels) return p;  // float experts: PerPair
    // The tile kernel's grid: a tile of rows per y (at most kMaxGridYZ), and int32 tile numbers (experts with pairs
    // outside it take the mat-vec path, which has no such limits).
    const int64_t row_tiles = (as.ne[1] + kTileWeightRows - 1) / kTileWeightRows;
    const bool tiles = as.ne[0] > 0 && ids.ne[1] >= kExpertTilesMinTokens && p.experts <= kExpertTilesMaxExperts &&
                       p.pairs <= std::numeric_limits<int32_t>::max() / 2 && row_tiles <= kMaxGridYZ;
    if (!tiles) {
        const Tensor& b = *dst.src[1];
        p.path = ExpertProductPath::MatVec;
        p.columns = b.ne[1] * b.ne[2];
        p.k = as.ne[0];
        p.wide_loads = wide_loads_usable(as);
        p.quantized = quantized_columns(p.columns, p.k);
        p.scratch_bytes = p.quantized.bytes;
        return p;
    }
    p.path = ExpertProductPath::Tiles;
    // Each expert's pairs fill whole tiles but the last.
    p.max_tiles = (p.pairs + kTileColumns - 1) / kTileColumns + p.experts;
    const auto starts = static_cast<size_t>(p.experts + 1) * sizeof(int32_t);
    p.pair_start_offset = 0;
    p.tile_start_offset = align_scratch(starts);
    p.pairs_offset = p.tile_start_offset + align_scratch(starts);
    p.scratch_bytes = p.pairs_offset + align_scratch(static_cast<size_t>(p.pairs) * sizeof(int32_t));
    return p;
}

}  // namespace xb::cuda
