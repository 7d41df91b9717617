#include "compare_report.hpp"

#include <cmath>

namespace xb::tools {

namespace {

NodeResult describe(int index, const Tensor& node) {
    NodeResult r;
    r.index = index;
    r.name = node.display_name();
    r.op = node.op_label();
    r.shape = node.shape_string();
    r.type = dtype_name(node.type);
    return r;
}

// JSON has no NaN or infinity: such a figure is written as a string.
nlohmann::ordered_json number(double v) {
    return std::isfinite(v) ? nlohmann::ordered_json(v) : nlohmann::ordered_json(std::to_string(v));
}

}  // namespace

bool CompareReport::add(int index, const Tensor& node, const report::ErrorMetrics& m, double tolerance) {
    NodeResult r = describe(index, node);
    r.metrics = m;
    r.tolerance = tolerance;
    r.ok = m.nan_count == 0 && m.inf_mismatch == 0 && m.nmse <= tolerance;
    ++compared_;
    if (!r.ok) ++failed_;
    nodes_.push_back(std::move(r));
    return nodes_.back().ok;
}

void CompareReport::add_skip(int index, const Tensor& node, const std::string& reason) {
    NodeResult r = describe(index, node);
    r.skip_reason = reason;
    ++skipped_;
    nodes_.push_back(std::move(r));
}

void CompareReport::set_first_divergent(int index, std::string inputs_detail) {
    if (first_divergent_) return;
    first_divergent_ = index;
    detail_ = std::move(inputs_detail);
}

report::Table CompareReport::table() const {
    report::Table t({"node", "name", "op", "shape", "type", "status", "nmse", "max_abs", "cosine", "nan_inf", "tolerance"});
    for (const NodeResult& r : nodes_) {
        std::vector<report::Cell> row = {static_cast<int64_t>(r.index), r.name, r.op, r.shape, r.type};
        if (!r.metrics) {
            row.emplace_back("skipped: " + r.skip_reason);
        } else {
            const report::ErrorMetrics& m = *r.metrics;
            row.insert(row.end(), {std::string(r.ok ? "ok" : "FAIL"), m.nmse, m.max_abs, m.cosine,
                                   m.nan_count + m.inf_mismatch, r.tolerance});
        }
        t.add_row(std::move(row));
    }
    return t;
}

nlohmann::ordered_json CompareReport::json() const {
    nlohmann::ordered_json nodes = nlohmann::ordered_json::array();
    for (const NodeResult& r : nodes_) {
        nlohmann::ordered_json n = {{"index", r.index}, {"name", r.name}, {"op", r.op},
                                    {"shape", r.shape}, {"type", r.type}};
        if (r.metrics) {
            const report::ErrorMetrics& m = *r.metrics;
            n.update({{"nmse", number(m.nmse)}, {"max_abs", number(m.max_abs)}, {"cos", number(m.cosine)},
                      {"nan_inf", m.nan_count + m.inf_mismatch}, {"tolerance", r.tolerance}, {"ok", r.ok}});
        } else {
            n.update({{"skipped", r.skip_reason}});
        }
        nodes.push_back(std::move(n));
    }
    return {{"backends", {reference_, target_}},
            {"compared", compared_},
            {"skipped", skipped_},
            {"passed", compared_ - failed_},
            {"failed", failed_},
            {"first_divergent", first_divergent_ ? nlohmann::ordered_json(*first_divergent_) : nlohmann::ordered_json(nullptr)},
            {"nodes", std::move(nodes)}};
}

}  // namespace xb::tools
