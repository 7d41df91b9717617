// What backend-compare found, node by node and at the graph's outputs: the rows of its table and
// the fields of its JSON report (backends, mode, compared, skipped, passed, failed, introduced,
// inherited, first_divergent, first_divergent_node, end_to_end, nodes[...]).
#pragma once

#include <array>
#include <optional>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "core/tensor.hpp"
#include "report/metrics.hpp"
#include "report/table.hpp"

namespace xb::tools {

// A source of a node out of tolerance, compared between the two backends as the node read it.
struct InputError {
    int slot = 0;
    std::string name;
    report::ErrorMetrics metrics;
};

// No NaN/Inf mismatch and NMSE at most `tolerance`.
bool within_tolerance(const report::ErrorMetrics& m, double tolerance);

// Where a node out of tolerance got its error: made there (introduced: the node itself computes
// differently), or carried in with its inputs (inherited: from the same inputs it computes within
// tolerance; its inputs came from a node that introduced error, or from products within their own
// looser tolerance, as quantized products differ between backends).
enum class Origin { None, Introduced, Inherited };
const char* origin_name(Origin o);

// Both sides' distance from the truth (--truth F64: exact arithmetic) at one node.
struct TruthErrors {
    report::ErrorMetrics reference;
    report::ErrorMetrics target;
    // "target" or "reference": whose NMSE against the truth is smaller ("equal" when they match).
    std::string closer() const;
};

struct NodeResult {
    int index = 0;
    std::string name, op, shape, type;
    std::array<int64_t, 4> ne{};
    std::optional<int> layer;                     // from a model builder's name ("ffn_out-3": 3)
    std::string device;                           // where the placed run computed it (--placed)
    std::optional<report::ErrorMetrics> metrics;  // absent when skipped
    std::string skip_reason;
    double tolerance = 0;
    std::optional<double> budget;      // the end-to-end budget here (verdict.hpp), when judged
    bool ok = false;
    Origin origin = Origin::None;      // for nodes out of tolerance
    std::vector<InputError> inputs;    // likewise
    std::optional<TruthErrors> truth;  // with --truth
};

// How many times the reference's own error a target may differ by, by default (verdict.hpp;
// --e2e-margin). A target as accurate as the reference differs by about twice it (both err,
// independently): measured between the CPU and an H100 (results/gpu-nvidia-h100-80gb-hbm3-logs),
// every node of every shipped config differs by at most 1.7 times it (a bf16 product; q4_K
// products 1.7, f32 decoders 0.05). Ten leaves six times that for kernels that round more.
inline constexpr double kEndToEndMargin = 10.0;

// One output of the graph against its end-to-end tolerance (verdict.hpp).
struct OutputResult {
    int index = 0;
    std::string name;
    std::string kind;                             // "float" or "integer"
    std::optional<report::ErrorMetrics> metrics;  // absent when the output was not compared
    double reference_error = 0;                   // the reference's own error there (NMSE)
    double tolerance = 0;
    bool ok = true;
};

// The node where the error starts growing: the largest jump of its error over its inputs'.
struct GrowthNode {
    int index = 0;
    std::string name, op;
    double excess = 0;  // its NMSE over its budget
    double jump = 0;    // its excess over its sources' largest (at least 1)
};

class CompareReport {
public:
    // `mode`: "propagated" (each backend computes from its own results) or "isolated" (the target
    // computes every node from the reference's inputs).
    CompareReport(std::string reference, std::string target, std::string mode = "propagated")
        : reference_(std::move(reference)), target_(std::move(target)), mode_(std::move(mode)) {}

    // The third device every node is measured against (--truth), named in the report; each node
    // then gets both sides' errors (set_truth).
    void set_truth_device(std::string truth) { truth_ = std::move(truth); }
    // For the node just added: the reference's and the target's errors against the truth.
    void set_truth(TruthErrors errors) { nodes_.back().truth = std::move(errors); }
    // What each output's end-to-end tolerance is a multiple of, for the report's text and JSON
    // (default "the reference's own error", the estimate; "its measured error against F64" with a
    // truth).
    void set_budget_basis(std::string basis) { budget_basis_ = std::move(basis); }

    // Adds node i's result; true when it is within `tolerance` (no NaN/Inf mismatch, NMSE <= it).
    bool add(int index, const Tensor& node, const report::ErrorMetrics& m, double tolerance);
    void add_skip(int index, const Tensor& node, const std::string& reason);
    // The target's name when it is known only after the run (--placed: its backends).
    void set_target(std::string target) { target_ = std::move(target); }
    // For the node just added out of tolerance: where its error came from and its inputs' errors.
    // The first node that introduces error is the first divergent one; the comparison fails when
    // there is one.
    void explain(Origin origin, std::vector<InputError> inputs);

    // End to end (verdict.hpp): node i's budget, each output's verdict, the growth node; or why the
    // outputs were not judged (an isolated run, a run stopped early).
    void set_budget(int index, double budget);
    void add_output(OutputResult output) { outputs_.push_back(std::move(output)); }
    void set_growth(GrowthNode growth) { growth_ = std::move(growth); }
    void skip_end_to_end(std::string reason) { end_to_end_skipped_ = std::move(reason); }
    void set_margin(double margin) { margin_ = margin; }
    // Set where the placed run computed node i.
    void set_device(int index, std::string device);

    const std::vector<NodeResult>& nodes() const { return nodes_; }
    const NodeResult* node(int index) const;
    const std::vector<OutputResult>& outputs() const { return outputs_; }
    const std::optional<GrowthNode>& growth() const { return growth_; }
    // An output beyond its end-to-end tolerance.
    bool end_to_end_failed() const;
    // Lines for a person: each output beyond its tolerance and the growth node; or, when the
    // outputs were judged and passed, one line saying so.
    std::string end_to_end_text() const;

    int compared() const { return compared_; }
    int skipped() const { return skipped_; }
    int failed() const { return failed_; }
    int introduced() const { return introduced_; }
    int inherited() const { return inherited_; }
    std::optional<int> first_divergent() const { return first_divergent_; }
    // Lines for a person: the first divergent node's worst element and its inputs' errors.
    std::string first_divergent_detail() const;

    report::Table table() const;
    nlohmann::ordered_json json() const;

private:
    const NodeResult* first_divergent_node() const;
    nlohmann::ordered_json end_to_end_json() const;

    std::string reference_, target_, mode_;
    std::vector<NodeResult> nodes_;
    int compared_ = 0, skipped_ = 0, failed_ = 0, introduced_ = 0, inherited_ = 0;
    std::optional<int> first_divergent_;
    std::vector<OutputResult> outputs_;
    std::optional<GrowthNode> growth_;
    std::string end_to_end_skipped_ = "not judged";
    std::string truth_;
    std::string budget_basis_ = "the reference's own error";
    double margin_ = kEndToEndMargin;
};

}  // namespace xb::tools
