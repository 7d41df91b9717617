// Proves that an allocated graph's memory layout is safe: walking the nodes in execution order, no
// two tensors whose lifetimes overlap share bytes (views, and in-place reuse by an op that may run
// in place over the source that dies there, excepted), and every tensor lies inside its buffer
// at the buffer's alignment. Used by the tests and, in debug builds, after every alloc_graph.
#pragma once

#include "core/graph.hpp"
#include "core/status.hpp"

namespace xb {

// Ok, or Internal with a message naming the first two conflicting tensors (or the misplaced one).
Status check_graph_allocation(const Graph& graph);

}  // namespace xb
