// graph_copy: a graph with its tensors and data copied to another backend; and
// compare_graph_backend: run two backends over the same graph node by node (ggml's utilities of
// the same names). The tools' backend-compare is built on these.
#pragma once

#include <functional>
#include <memory>

#include "backend/backend.hpp"
#include "core/context.hpp"
#include "core/graph.hpp"
#include "core/status.hpp"

namespace xb {

struct GraphCopy {
    std::unique_ptr<Context> allocated;    // copies that own memory
    std::unique_ptr<Context> unallocated;  // copies of views
    std::unique_ptr<MultiBuffer> buffer;   // on the target backend
    Graph graph;                           // node i is the copy of the original's node i
};

// Copies every tensor the graph reaches, with its current data, into a new buffer of `backend`.
// The original graph must be allocated.
Result<GraphCopy> graph_copy(Backend& backend, const Graph& graph);

// Called for each computed node i with backend1's result t1 and backend2's t2 (views skipped);
// return false to stop the walk.
using CompareCallback = std::function<bool(int index, const Tensor& t1, const Tensor& t2)>;

// Copies `graph` (allocated for backend1, inputs set) to backend2, then computes node by node on
// both and hands each pair to `callback`. Each backend computes from its own earlier results.
Status compare_graph_backend(Backend& backend1, Backend& backend2, const Graph& graph, const CompareCallback& callback);

}  // namespace xb
