// What every comparison mode asks of a node: its error against the reference, its inputs' errors,
// and whether an error came in through its sources (inherited) or was made there (introduced).
#pragma once

#include <vector>

#include "compare_report.hpp"
#include "core/graph.hpp"
#include "core/status.hpp"
#include "report/metrics.hpp"

namespace xb::tools {

// target's values against reference's (both readable through tensor_get).
Result<report::ErrorMetrics> metrics_of(const Tensor& target, const Tensor& reference);

// The inputs of a divergent node, compared as the two backends held them: did the error come in,
// or was it made here?
std::vector<InputError> input_errors(const Tensor& reference_node, const Tensor& target_node);

// Which nodes' results, as the target holds them, are out of tolerance, so that a failing node can
// tell whether an input brought its error. A view carries its sources' state; leafs (weights,
// inputs) are the same on both sides.
class Divergence {
public:
    explicit Divergence(const Graph& graph) : graph_(graph), bad_(static_cast<size_t>(graph.n_nodes()), 0) {}
    void set(int i, bool bad) { bad_[static_cast<size_t>(i)] = bad ? 1 : 0; }
    bool any_source_bad(const Tensor& node) const;

private:
    bool bad(const Tensor* t) const;

    const Graph& graph_;
    std::vector<char> bad_;
};

}  // namespace xb::tools
