// What one computation of a case costs, for perf mode: the bytes its op moves and the arithmetic it
// does. Matrix products (mul_mat_id's too) and attention are compute-bound (judged in GFLOP/s)
// except products of at most kMemoryBoundColumns columns (tokens, for mul_mat_id) (decoding: every
// weight byte is read for a few multiply-adds, judged in GB/s); every other op is memory-bound
// (GB/s), as ggml's test-backend-ops counts them. mul_mat_id reads, of its stacked experts, at most
// one per (slot, token) pair.
#pragma once

#include "core/tensor.hpp"
#include "opcheck/case_graph.hpp"

namespace xb::opcheck {

inline constexpr int64_t kMemoryBoundColumns = 8;

struct CaseCost {
    double bytes = 0.0;          // read and written by the case's op (its output node)
    double flops = 0.0;          // multiply-adds count 2; 0 for memory-bound ops
    bool compute_bound = false;  // report GFLOP/s rather than GB/s
};

// The cost of `op` (a computed node) alone.
CaseCost op_cost(const Tensor& op);
// The cost of the case's output node: views and copies feeding it are part of the case's set-up.
inline CaseCost case_cost(const CaseGraph& graph) { return op_cost(graph.output()); }

}  // namespace xb::opcheck
