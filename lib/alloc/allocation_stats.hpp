// Figures that judge a graph allocation: what it would take with no reuse at all, and the least
// any allocator could need for the same node order.
#pragma once

#include <cstddef>
#include <span>

#include "backend/buffer.hpp"
#include "core/graph.hpp"
#include "core/status.hpp"

namespace xb {

struct AllocationStats {
    size_t placed_bytes = 0;       // bytes of the tensors placed in `buffers` (aligned), no reuse
    size_t lower_bound_bytes = 0;  // the largest total of those bytes live at one node
};

// Considers only tensors whose storage lies in one of `buffers` (the compute buffers); tensors
// computed in place share their parent's bytes and count once. Sizes are rounded to the buffer's
// alignment, which no allocator can avoid.
Result<AllocationStats> measure_allocation(const Graph& graph, std::span<const Buffer* const> buffers);

}  // namespace xb
