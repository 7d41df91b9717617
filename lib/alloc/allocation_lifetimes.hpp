// Lifetimes of the memory a graph uses, in node indices: what the allocation checker and the
// allocation statistics reason about.
#pragma once

#include <cstddef>
#include <vector>

#include "core/graph.hpp"
#include "core/status.hpp"

namespace xb {

// A tensor that owns bytes (not a view) and when, in node indices, those bytes are in use.
struct StorageLifetime {
    const Tensor* tensor;
    const std::byte* begin;
    const std::byte* end;
    int first;  // index of the node that writes it; -1 when it exists before the graph runs
    int last;   // index of its last reader; n_nodes when it must survive the graph
};

// Every allocated storage root that the graph reads or writes, after checking that each lies
// inside its buffer at the buffer's alignment (Internal status otherwise).
Result<std::vector<StorageLifetime>> storage_lifetimes(const Graph& graph);

// b is computed in place over a, which it reads for the last time there.
bool is_inplace_successor(const StorageLifetime& a, const StorageLifetime& b);

}  // namespace xb
