// How the GPU computes mul_mat_id, the experts' products of a mixture-of-experts layer (pure host
// logic, unit-tested without a GPU):
//   - float experts: a warp per output, the row of the expert the (slot, token) pair chose against
//     the pair's column (kernels_moe.cu);
//   - quantized experts, few tokens (decoding): b's columns quantized once to 8-bit blocks, then the
//     mat-vec kernel of quantized products (kernels_mat_vec_q.cu) over (row, pair), each pair's
//     rows taken from the expert it chose, as ggml's MMVQ does for mul_mat_id; each expert's
//     weights are read once per pair that chose it;
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

enum class ExpertProductPath { PerPair, MatVec, Tiles };

struct ExpertProductPlan {
    ExpertProductPath path = ExpertProductPath::PerPair;
    int64_t experts = 0;      // as.ne[2]
    int64_t pairs = 0;        // n_used * tokens
    // Tiles: column tiles over all experts, at most (the tile kernel's grid). Scratch, int32 each:
    // pair_start[experts + 1] (an expert's pairs in `pairs`), tile_start[experts + 1] (its first
    // column tile), pairs[pairs] (p = slot + n_used * token, grouped by expert).
    int64_t max_tiles = 0;
    size_t pair_start_offset = 0;
    size_t tile_start_offset = 0;
    size_t pairs_offset = 0;
    // MatVec: b's columns quantized in scratch, column c = slot + b.ne[1] * token for per-slot
    // activations (b.ne[1] == n_used), c = token for shared ones (b.ne[1] == 1).
    int64_t columns = 0;        // b.ne[1] * b.ne[2]
    int64_t k = 0;              // the dot length
    bool wide_loads = false;    // as in QuantProductPlan
    QuantizedColumns quantized;
    size_t scratch_bytes = 0;   // either path's
};

// The plan of a mul_mat_id node the CUDA backend supports. Reads the experts' data address (the
// wide loads need 16-byte aligned rows), so make it after allocation for the kernels' use.
ExpertProductPlan plan_expert_product(const Tensor& dst);

// Pair p of mul_mat_id (p = slot + n_used * token): its slot and token, which name its output
// column (dst[:, slot, token]), and its column of b among b's rows (dim 1 fastest): b.ne[1] is 1
// (the slots share the token's column) or n_used (a column per slot).
struct ExpertPair {
    int64_t slot = 0;
    int64_t token = 0;
    int64_t b_column = 0;
};
XB_HD ExpertPair expert_pair(int64_t p, int64_t n_used, int64_t b_columns) {
    ExpertPair pair;
    pair.slot = p % n_used;
    pair.token = p / n_used;
    pair.b_column = pair.slot % b_columns + b_columns * pair.token;
    return pair;
}

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
