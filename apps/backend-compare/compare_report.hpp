// What backend-compare found, node by node: the rows of its table and the fields of its JSON
// report (backends, compared, skipped, passed, first_divergent, nodes[...]).
#pragma once

#include <optional>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "core/tensor.hpp"
#include "report/metrics.hpp"
#include "report/table.hpp"

namespace xb::tools {

struct NodeResult {
    int index = 0;
    std::string name, op, shape, type;
    std::optional<report::ErrorMetrics> metrics;  // absent when skipped
    std::string skip_reason;
    double tolerance = 0;
    bool ok = false;
};

class CompareReport {
public:
    CompareReport(std::string reference, std::string target) : reference_(std::move(reference)), target_(std::move(target)) {}

    // Adds node i's result; true when it is within `tolerance` (no NaN/Inf mismatch, NMSE <= it).
    bool add(int index, const Tensor& node, const report::ErrorMetrics& m, double tolerance);
    void add_skip(int index, const Tensor& node, const std::string& reason);
    // The first node out of tolerance, and what its inputs' errors were (see backend-compare).
    void set_first_divergent(int index, std::string inputs_detail);

    int compared() const { return compared_; }
    int skipped() const { return skipped_; }
    int failed() const { return failed_; }
    std::optional<int> first_divergent() const { return first_divergent_; }
    const std::string& first_divergent_detail() const { return detail_; }

    report::Table table() const;
    nlohmann::ordered_json json() const;

private:
    std::string reference_, target_;
    std::vector<NodeResult> nodes_;
    int compared_ = 0, skipped_ = 0, failed_ = 0;
    std::optional<int> first_divergent_;
    std::string detail_;
};

}  // namespace xb::tools
