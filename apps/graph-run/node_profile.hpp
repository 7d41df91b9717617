// graph-run --profile: the time of every node, measured by computing the graph one node at a
// time through the scheduler's eval callback (each node launched and synchronised on its own, so
// the sum exceeds a plain compute by one launch per node; the report gives both). Works on every
// backend, the simulated and CUDA ones included.
#pragma once

#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "core/status.hpp"
#include "report/table.hpp"
#include "session.hpp"

namespace xb::tools {

struct NodeTime {
    int index = 0;  // in the model's graph
    std::string name, op, backend, shape, type;
    size_t bytes = 0;  // of the node's output
    double us = 0;     // median over the profiled computes
};

struct NodeProfile {
    int reps = 0;
    std::vector<NodeTime> nodes;  // graph order; nodes that compute nothing (views) left out
    double sum_us() const;
};

// Computes the session's graph `reps` times node by node (inputs set before each) and returns the
// median time of each node. Leaves no eval callback behind.
Result<NodeProfile> profile_nodes(Session& s, int reps);

// Per op: nodes, total milliseconds, share of the sum and milliseconds per node, slowest first.
report::Table op_table(const NodeProfile& p);
// The `n` slowest nodes: index, name, op, backend, shape, milliseconds and share of the sum.
report::Table slowest_nodes_table(const NodeProfile& p, int n);
// {"reps", "sum_us", "ops": op_table rows, "nodes": every node with all its fields}.
nlohmann::ordered_json profile_json(const NodeProfile& p);

}  // namespace xb::tools
