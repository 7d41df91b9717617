// What backend-compare found, node by node: the rows of its table and the fields of its JSON
// report (backends, mode, compared, skipped, passed, failed, introduced, inherited,
// first_divergent, first_divergent_node, nodes[...]).
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

struct NodeResult {
    int index = 0;
    std::string name, op, shape, type;
    std::array<int64_t, 4> ne{};
    std::optional<report::ErrorMetrics> metrics;  // absent when skipped
    std::string skip_reason;
    double tolerance = 0;
    bool ok = false;
    Origin origin = Origin::None;      // for nodes out of tolerance
    std::vector<InputError> inputs;    // likewise
};

class CompareReport {
public:
    // `mode`: "propagated" (each backend computes from its own results) or "isolated" (the target
    // computes every node from the reference's inputs).
    CompareReport(std::string reference, std::string target, std::string mode = "propagated")
        : reference_(std::move(reference)), target_(std::move(target)), mode_(std::move(mode)) {}

    // Adds node i's result; true when it is within `tolerance` (no NaN/Inf mismatch, NMSE <= it).
    bool add(int index, const Tensor& node, const report::ErrorMetrics& m, double tolerance);
    void add_skip(int index, const Tensor& node, const std::string& reason);
    // The target's name when it is known only after the run (--placed: its backends).
    void set_target(std::string target) { target_ = std::move(target); }
    // For the node just added out of tolerance: where its error came from and its inputs' errors.
    // The first node that introduces error is the first divergent one; the comparison fails when
    // there is one.
    void explain(Origin origin, std::vector<InputError> inputs);

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

    std::string reference_, target_, mode_;
    std::vector<NodeResult> nodes_;
    int compared_ = 0, skipped_ = 0, failed_ = 0, introduced_ = 0, inherited_ = 0;
    std::optional<int> first_divergent_;
};

}  // namespace xb::tools
