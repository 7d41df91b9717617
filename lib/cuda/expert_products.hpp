// How the GPU computes mul_mat_id, the experts' products of a mixture-of-experts layer (pure host
// logic, unit-tested without a GPU):
//   - few tokens (decoding): a warp per output, the row of the expert the (slot, token) pair chose
//     against the pair's column (kernels_moe.cu); each expert's weights are read once per pair;
//   - from kExpertTilesMinTokens tokens on (prefill), quantized experts: the pairs are grouped by
//     expert on the device (a counting sort into scratch; nothing is copied to the host), then the
//     prefill tile kernel (kernels_mat_mat_q.cu) multiplies each expert's weights with tiles of
//     kTileColumns of its own pairs' columns, as ggml's MMQ does for mul_mat_id: an expert's
//     weights are read once per tile of pairs instead of once per pair.
#pragma once

#include <cstddef>
#include <cstdint>

#include "core/host_device.hpp"
#include "core/tensor.hpp"
#include "cuda/quant_products.hpp"

namespace xb::cuda {

inline constexpr int64_t kExpertTilesMinTokens = 16;
// The grouping counts pairs per expert in shared memory, one int each.
inline constexpr int64_t kExpertTilesMaxExperts = 4096;

struct ExpertProductPlan {
    bool grouped = false;     // the tile path, with the scratch below
    int64_t experts = 0;      // as.ne[2]
    int64_t pairs = 0;        // n_used * tokens
    int64_t max_tiles = 0;    // column tiles over all experts, at most (the tile kernel's grid)
    // Scratch, int32 each: pair_start[experts + 1] (an expert's pairs in `pairs`), tile_start[experts
    // + 1] (its first column tile), pairs[pairs] (p = slot + n_used * token, grouped by expert).
    size_t pair_start_offset = 0;
    size_t tile_start_offset = 0;
    size_t pairs_offset = 0;
    size_t scratch_bytes = 0;
};

// The plan of a mul_mat_id node the CUDA backend supports.
ExpertProductPlan plan_expert_product(const Tensor& dst);

// Column tiles of an expert chosen by `pairs` pairs.
XB_HD int32_t expert_tiles(int32_t pairs) { return (pairs + kTileColumns - 1) / kTileColumns; }

// The expert whose column tiles include tile `tile`, given each expert's first tile (tile_start,
// experts + 1 entries, running sums of expert_tiles; tile < tile_start[experts]): the last e with
// tile_start[e] <= tile. Experts without pairs have no tiles, so that e's tiles end past `tile`.
XB_HD int64_t expert_of_tile(const int32_t* tile_start, int64_t experts, int32_t tile) {
    int64_t lo = 0, hi = experts;  // tile_start[lo] <= tile < tile_start[hi]
    while (hi - lo > 1) {
        const int64_t mid = (lo + hi) / 2;
        if (tile_start[mid] <= tile) {
            lo = mid;
        } else {
            hi = mid;
        }
    }
    return lo;
}

}  // namespace xb::cuda
