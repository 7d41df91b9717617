// What every comparison mode asks of a node: its error against the reference, its inputs' errors,
// and whether an error came in through its sources (inherited) or was made there (introduced).
#pragma once

#include <optional>
#include <vector>

#include "compare_report.hpp"
#include "backend/backend.hpp"
#include "core/graph.hpp"
#include "core/status.hpp"
#include "report/metrics.hpp"
#include "sched/graph_copy.hpp"

namespace xb::tools {

// target's values against reference's (both readable through tensor_get).
Result<report::ErrorMetrics> metrics_of(const Tensor& target, const Tensor& reference);

// The inputs of a divergent node, compared as the two backends held them: did the error come in,
// or was it made here?
std::vector<InputError> input_errors(const Tensor& reference_node, const Tensor& target_node);

// Each node's error as the target holds it, so that a node out of tolerance can tell, without
// computing anything again, whether its inputs brought the error. A view carries its sources'
// error; leafs (weights, inputs) are the same on both sides.
class Divergence {
public:
    // A node's error may grow this many times over what its sources carried and still count as
    // carried: element-wise ops keep an input's NMSE, products of two inputs add theirs, and
    // soft_max scales it by about the square of the logits' spread. Beyond it the node made error.
    static constexpr double kCarriedGrowth = 10.0;

    explicit Divergence(const Graph& graph) : graph_(graph), nodes_(static_cast<size_t>(graph.n_nodes())) {}
    // Node i compared, with its tolerance.
    void set(int i, const report::ErrorMetrics& m, double tolerance);
    // Where a node out of tolerance got its error, from its sources' errors alone: inherited when a
    // source was out of its own tolerance, or when its sources already differed by more than this
    // node's tolerance and the node's error is within kCarriedGrowth of theirs.
    Origin origin_from_sources(const Tensor& node, const report::ErrorMetrics& m, double tolerance) const;

private:
    struct State {
        bool bad = false;
        double nmse = 0;  // NaN where NaN/Inf differ
    };
    State state_of(const Tensor* t) const;
    State sources_of(const Tensor& node) const;  // bad if any is; NMSE summed

    const Graph& graph_;
    std::vector<State> nodes_;
};

// Decides a node's origin exactly in the default (propagated) comparison: the target computes the
// node again from the reference's inputs, in a copy of the graph of its own (made at the first
// use), so that the propagated results stay as they were. Within tolerance that way, the node
// computes right and its error is inherited; out of it, the node introduces error.
class IsolatedRecheck {
public:
    IsolatedRecheck(Backend& target, const Graph& reference) : target_(target), reference_(reference) {}
    // Node i computed on the target from the reference's current inputs, against the reference.
    Result<report::ErrorMetrics> recompute(int i);

private:
    Backend& target_;
    const Graph& reference_;
    std::optional<GraphCopy> copy_;
};

}  // namespace xb::tools
