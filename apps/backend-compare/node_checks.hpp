// What every comparison mode asks of a node: its error against the reference, its inputs' errors,
// and whether an error came in through its sources (inherited) or was made there (introduced).
#pragma once

#include <string>
#include <unordered_map>
#include <vector>

#include "compare_report.hpp"
#include "device_params.hpp"
#include "core/graph.hpp"
#include "core/status.hpp"
#include "reference_file.hpp"
#include "report/metrics.hpp"
#include "sched/error_budget.hpp"
#include "sched/graph_copy.hpp"
#include "tolerances.hpp"

namespace xb::tools {

// target's values against reference's (both readable through tensor_get).
Result<report::ErrorMetrics> metrics_of(const Tensor& target, const Tensor& reference);

// The inputs of a divergent node, compared as the two backends held them: did the error come in,
// or was it made here?
std::vector<InputError> input_errors(const Tensor& reference_node, const Tensor& target_node);

// Which computed nodes' results each node reads: a source that is a node, the node a view looks
// into, and for a view of a leaf the graph writes into (a KV cache, written by set_rows or cpy
// nodes that are not the reader's sources) the nodes that wrote it before the reader. Weights and
// inputs carry nothing.
class Carriers {
public:
    explicit Carriers(const Graph& graph);
    // The carriers of node i's sources, each once.
    std::vector<int> of(int i) const;

private:
    void add(const Tensor* src, int reader, std::vector<int>& out) const;

    const Graph& graph_;
    std::unordered_map<const Tensor*, std::vector<int>> writers_;  // leaf -> nodes writing into it, in order
};

// Each node's error as the target holds it, so that a node out of tolerance can tell, without
// computing anything again, whether its inputs brought the error (through Carriers: a view
// carries what it looks into, a cache what was written into it); leafs (weights, inputs) are the
// same on both sides.
class Divergence {
public:
    // A node's error may grow this many times over what its sources carried and still count as
    // carried: element-wise ops keep an input's NMSE, products of two inputs add theirs, and
    // soft_max scales it by about the square of the logits' spread. Beyond it the node made error.
    static constexpr double kCarriedGrowth = 10.0;

    explicit Divergence(const Graph& graph) : carriers_(graph), nodes_(static_cast<size_t>(graph.n_nodes())) {}
    // Node i compared, with its tolerance.
    void set(int i, const report::ErrorMetrics& m, double tolerance);
    // Where a node out of tolerance got its error, from its sources' errors alone: inherited when a
    // source was out of its own tolerance, or when its sources already differed by more than this
    // node's tolerance and the node's error is within kCarriedGrowth of theirs.
    Origin origin_from_sources(int i, const report::ErrorMetrics& m, double tolerance) const;

private:
    struct State {
        bool bad = false;
        double nmse = 0;  // NaN where NaN/Inf differ
    };

    Carriers carriers_;
    std::vector<State> nodes_;
};

// A fault on a device that takes no part in the comparison (`devices`, described by `what`) would
// inject nothing and let it pass: InvalidArgument naming the -P item.
Status check_fault_devices(const std::vector<ResolvedFault>& faults, const std::vector<std::string>& devices,
                           const std::string& what);
// After the run: each faulted node the run reached was computed by the fault's device (not skipped
// as unsupported, and in a placed run not put on another device); InvalidArgument naming the node
// and where it ran otherwise.
Status check_faults_injected(const std::vector<ResolvedFault>& faults, const CompareReport& report);

struct JudgeOptions {
    std::string target{};        // the target's name, for skipped nodes
    bool stop_at_first = false;  // stop at the first node that introduces error
    bool isolated = false;       // every node computed from the reference's inputs: its error is its own
    // The target's sources still hold what it computed, so that a failing node's inputs can be
    // compared (not in a placed run, whose allocator reuses their memory).
    bool inputs_readable = true;
    ReferenceWriter* save = nullptr;  // keeps every node the target computed (--save-outputs)
};

// Judges the nodes of a live comparison (compare_graph_backend, compare_graph_scheduled) into a
// report: each node against its tolerance, and a node out of it introduced or inherited, exactly
// (computed again from the reference's inputs) where the comparison can, else from its sources'
// recorded errors (Divergence).
class LiveJudge {
public:
    LiveJudge(const Graph& graph, const Tolerances& tol, const JudgeOptions& options, CompareReport& report)
        : tol_(tol), options_(options), report_(report), divergence_(graph),
          reference_vs_truth_(static_cast<size_t>(graph.n_nodes()), 0.0) {}

    // The comparison's callback: false to stop (an error is kept for status()).
    bool operator()(const NodeComparison& node);
    // The first error a node met.
    const Status& status() const { return status_; }
    // Whether the walk stopped at an introduced node (--stop-at-first).
    bool stopped() const { return stopped_; }
    // With a truth (NodeComparison::truth): the reference's measured error against it at every
    // node, as the end-to-end verdict's budget (verdict.hpp) in place of the estimate.
    ErrorBudget measured_budget() const { return {std::vector<double>(reference_vs_truth_.size(), 0.0), reference_vs_truth_, 0}; }

    // A product's tolerance grows to this many times the error its activations' rounding makes there
    // (product_rounding.hpp): a correct backend differs from exact by about 1x it (xbackend's CPU on
    // Gemma 3's first layer: 0.99-1.01x), from another correct backend by up to 2x (independent
    // roundings); 4 leaves 2x for kernels that round a little more.
    static constexpr double kActivationRoundingMargin = 4.0;

private:
    Result<bool> judge(const NodeComparison& node);
    // The op's tolerance (Tolerances), or for a product whose error `m` is beyond it, the larger
    // one its activations' rounding allows (kActivationRoundingMargin).
    Result<double> tolerance_of(const Tensor& node, const report::ErrorMetrics& m) const;

    const Tolerances& tol_;
    JudgeOptions options_;
    CompareReport& report_;
    Divergence divergence_;
    Status status_;
    bool stopped_ = false;
    std::vector<double> reference_vs_truth_;  // per node
};

}  // namespace xb::tools
