#include "alloc/allocation_stats.hpp"

#include <algorithm>
#include <vector>

#include "alloc/allocation_lifetimes.hpp"
#include "alloc/linear_allocator.hpp"

namespace xb {

Result<AllocationStats> measure_allocation(const Graph& graph, std::span<const Buffer* const> buffers) {
    XB_ASSIGN_OR_RETURN(std::vector<StorageLifetime> storages, storage_lifetimes(graph));
    std::erase_if(storages, [&](const StorageLifetime& s) {
        return std::find(buffers.begin(), buffers.end(), s.tensor->buffer) == buffers.end();
    });
    // A tensor computed in place continues its parent's storage: one block, the union of lifetimes.
    std::sort(storages.begin(), storages.end(), [](const StorageLifetime& a, const StorageLifetime& b) {
        return a.begin != b.begin ? a.begin < b.begin : a.first < b.first;
    });
    std::vector<StorageLifetime> blocks;
    for (const StorageLifetime& s : storages) {
        if (!blocks.empty() && is_inplace_successor(blocks.back(), s)) {
            blocks.back().last = s.last;
            blocks.back().tensor = s.tensor;  // the successor decides whether the chain continues
        } else {
            blocks.push_back(s);
        }
    }
    AllocationStats stats;
    const int n = graph.n_nodes();
    std::vector<size_t> live(static_cast<size_t>(n) + 2, 0);  // index i + 1 holds node i; 0 is "before"
    for (const StorageLifetime& b : blocks) {
        const size_t bytes = align_up(static_cast<size_t>(b.end - b.begin), b.tensor->buffer->alignment());
        for (int i = b.first; i <= b.last; ++i) live[static_cast<size_t>(i + 1)] += bytes;
    }
    for (const StorageLifetime& s : storages) {
        stats.placed_bytes += align_up(static_cast<size_t>(s.end - s.begin), s.tensor->buffer->alignment());
    }
    stats.lower_bound_bytes = *std::max_element(live.begin(), live.end());
    return stats;
}

}  // namespace xb
