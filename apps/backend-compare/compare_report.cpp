#include "compare_report.hpp"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <numeric>

namespace xb::tools {

namespace {

// The layer a model builder's node belongs to: its name's first word ends in "-<layer>"
// ("ffn_out-3", "attn_norm-0 (rms_norm)", and "ffn_out-3#95" once made unique).
std::optional<int> layer_of(const std::string& name) {
    const std::string base = name.substr(0, name.find_first_of("# "));
    const size_t dash = base.rfind('-');
    if (dash == std::string::npos || dash + 1 == base.size() || base.size() - dash > 7) return std::nullopt;
    if (base.find_first_not_of("0123456789", dash + 1) != std::string::npos) return std::nullopt;
    return std::stoi(base.substr(dash + 1));
}

NodeResult describe(int index, const Tensor& node) {
    NodeResult r;
    r.index = index;
    r.name = node.display_name();
    r.op = node.op_label();
    r.shape = node.shape_string();
    r.type = dtype_name(node.type);
    r.layer = layer_of(node.name);
    for (int d = 0; d < 4; ++d) r.ne[static_cast<size_t>(d)] = node.ne[d];
    return r;
}

std::string figure(double v) {
    char buf[32];
    std::snprintf(buf, sizeof buf, "%.3g", v);
    return buf;
}

// JSON has no NaN or infinity: such a figure is written as a string.
nlohmann::ordered_json number(double v) {
    return std::isfinite(v) ? nlohmann::ordered_json(v) : nlohmann::ordered_json(std::to_string(v));
}

// The coordinates [i0, i1, i2, i3] of element `flat` in logical order (dim 0 fastest).
std::array<int64_t, 4> coords(const NodeResult& r, int64_t flat) {
    std::array<int64_t, 4> c{};
    for (size_t d = 0; d < 4; ++d) {
        const int64_t n = std::max<int64_t>(r.ne[d], 1);
        c[d] = flat % n;
        flat /= n;
    }
    return c;
}

std::string coords_text(const std::array<int64_t, 4>& c) {
    return "[" + std::to_string(c[0]) + "," + std::to_string(c[1]) + "," + std::to_string(c[2]) + "," +
           std::to_string(c[3]) + "]";
}

std::string value_text(float v) {
    char buf[32];
    std::snprintf(buf, sizeof buf, "%.6g", static_cast<double>(v));
    return buf;
}

// "[i0,i1,i2,i3] 1.5 vs 0.25": where a failing node differs most, its value there and the reference's.
std::string worst_text(const NodeResult& r) {
    if (!r.metrics || r.metrics->worst_index < 0) return {};
    const report::ErrorMetrics& m = *r.metrics;
    return coords_text(coords(r, m.worst_index)) + " " + value_text(m.worst_value) + " vs " + value_text(m.worst_reference);
}

nlohmann::ordered_json worst_json(const NodeResult& r) {
    const report::ErrorMetrics& m = *r.metrics;
    if (m.worst_index < 0) return nullptr;
    return {{"index", m.worst_index}, {"coords", coords(r, m.worst_index)}, {"target", number(m.worst_value)},
            {"reference", number(m.worst_reference)}};
}

nlohmann::ordered_json inputs_json(const NodeResult& r) {
    nlohmann::ordered_json inputs = nlohmann::ordered_json::array();
    for (const InputError& in : r.inputs) {
        inputs.push_back({{"slot", in.slot}, {"name", in.name}, {"nmse", number(in.metrics.nmse)},
                          {"max_abs", number(in.metrics.max_abs)},
                          {"nan_inf", in.metrics.nan_count + in.metrics.inf_mismatch}});
    }
    return inputs;
}

}  // namespace

std::string TruthErrors::closer() const {
    if (target.nmse == reference.nmse) return "equal";
    return target.nmse < reference.nmse ? "target" : "reference";
}

const char* origin_name(Origin o) {
    switch (o) {
        case Origin::Introduced: return "introduced";
        case Origin::Inherited: return "inherited";
        case Origin::None: break;
    }
    return "";
}

bool within_tolerance(const report::ErrorMetrics& m, double tolerance) {
    return m.nan_count == 0 && m.inf_mismatch == 0 && m.nmse <= tolerance;
}

bool CompareReport::add(int index, const Tensor& node, const report::ErrorMetrics& m, double tolerance) {
    NodeResult r = describe(index, node);
    r.metrics = m;
    r.tolerance = tolerance;
    r.ok = within_tolerance(m, tolerance);
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

void CompareReport::explain(Origin origin, std::vector<InputError> inputs) {
    NodeResult& r = nodes_.back();
    r.origin = origin;
    r.inputs = std::move(inputs);
    ++(origin == Origin::Inherited ? inherited_ : introduced_);
    if (origin == Origin::Introduced && !first_divergent_) first_divergent_ = r.index;
}

void CompareReport::set_budget(int index, double budget) {
    for (NodeResult& r : nodes_) {
        if (r.index == index) r.budget = budget;
    }
}

void CompareReport::set_device(int index, std::string device) {
    for (auto it = nodes_.rbegin(); it != nodes_.rend(); ++it) {
        if (it->index == index) {
            it->device = std::move(device);
            return;
        }
    }
}

const NodeResult* CompareReport::node(int index) const {
    for (const NodeResult& r : nodes_) {
        if (r.index == index) return &r;
    }
    return nullptr;
}

bool CompareReport::end_to_end_failed() const {
    return std::any_of(outputs_.begin(), outputs_.end(), [](const OutputResult& o) { return !o.ok; });
}

std::string CompareReport::end_to_end_text() const {
    if (outputs_.empty()) return {};
    std::string text;
    for (const OutputResult& o : outputs_) {
        if (o.ok || !o.metrics) continue;
        const report::ErrorMetrics& m = *o.metrics;
        text += "output #" + std::to_string(o.index) + " '" + o.name + "' is beyond its end-to-end tolerance: nmse " +
                figure(m.nmse) + (m.nan_count + m.inf_mismatch > 0 ? " with NaN/Inf mismatches" : "") + " > " +
                figure(o.tolerance) + " (" + figure(margin_) + " x " + budget_basis_ + " there, " + figure(o.reference_error) + ")\n";
    }
    if (text.empty()) {
        return "outputs within their end-to-end tolerance (" + figure(margin_) + " x " + budget_basis_ +
               "; largest nmse/tolerance " +
               figure(std::accumulate(outputs_.begin(), outputs_.end(), 0.0,
                                      [](double worst, const OutputResult& o) {
                                          return o.metrics && o.tolerance > 0 ? std::max(worst, o.metrics->nmse / o.tolerance)
                                                                              : worst;
                                      })) +
               ")\n";
    }
    if (growth_ && !text.empty()) {
        text += "error grows from node #" + std::to_string(growth_->index) + " '" + growth_->name + "' (" + growth_->op +
                "): nmse " + figure(growth_->excess) + " x its budget, " + figure(growth_->jump) +
                " x what its inputs carried\n";
    }
    return text;
}

const NodeResult* CompareReport::first_divergent_node() const {
    for (const NodeResult& r : nodes_) {
        if (first_divergent_ && r.index == *first_divergent_) return &r;
    }
    return nullptr;
}

std::string CompareReport::first_divergent_detail() const {
    const NodeResult* r = first_divergent_node();
    if (r == nullptr) return {};
    std::string text;
    if (const std::string w = worst_text(*r); !w.empty()) text += "\n  worst element " + w + " (reference)";
    for (const InputError& in : r->inputs) {
        char buf[200];
        std::snprintf(buf, sizeof buf, "\n  input %d '%s': nmse %.3g, max_abs %.3g", in.slot, in.name.c_str(), in.metrics.nmse,
                      in.metrics.max_abs);
        text += buf;
    }
    if (r->inputs.empty()) text += mode_ == "placed" ? "\n  (inputs not compared: the placed run reuses their memory)" : "\n  (no inputs)";
    return text;
}

report::Table CompareReport::table() const {
    const bool placed = mode_ == "placed";
    std::vector<std::string> columns = {"node", "name", "op", "shape", "type"};
    if (placed) columns.emplace_back("device");
    for (const char* c : {"status", "nmse", "max_abs", "cosine", "nan_inf", "tolerance", "budget", "origin"}) {
        columns.emplace_back(c);
    }
    const bool truth = !truth_.empty();
    if (truth) {
        columns.insert(columns.end(), {"reference vs " + truth_, "target vs " + truth_, std::string("closer")});
    }
    columns.emplace_back("worst (target vs reference)");
    report::Table t(columns);
    for (const NodeResult& r : nodes_) {
        std::vector<report::Cell> row = {static_cast<int64_t>(r.index), r.name, r.op, r.shape, r.type};
        if (placed) row.emplace_back(r.device);
        if (!r.metrics) {
            row.emplace_back("skipped: " + r.skip_reason);
        } else {
            const report::ErrorMetrics& m = *r.metrics;
            row.insert(row.end(), {std::string(r.ok ? "ok" : "FAIL"), m.nmse, m.max_abs, m.cosine,
                                   m.nan_count + m.inf_mismatch, r.tolerance});
            if (r.budget) {
                row.emplace_back(*r.budget);
            } else {
                row.emplace_back(std::monostate{});
            }
            row.emplace_back(std::string(origin_name(r.origin)));
            if (truth && r.truth) {
                row.insert(row.end(), {r.truth->reference.nmse, r.truth->target.nmse, r.truth->closer()});
            } else if (truth) {
                row.insert(row.end(), {std::monostate{}, std::monostate{}, std::string()});
            }
            row.emplace_back(r.ok ? std::string() : worst_text(r));
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
        n["layer"] = r.layer ? nlohmann::ordered_json(*r.layer) : nlohmann::ordered_json(nullptr);
        if (!r.device.empty()) n["device"] = r.device;
        if (r.budget) n["budget"] = number(*r.budget);
        if (r.metrics) {
            const report::ErrorMetrics& m = *r.metrics;
            n.update({{"nmse", number(m.nmse)}, {"max_abs", number(m.max_abs)}, {"cos", number(m.cosine)},
                      {"nan_inf", m.nan_count + m.inf_mismatch}, {"tolerance", r.tolerance}, {"ok", r.ok}});
            if (!r.ok) n.update({{"origin", origin_name(r.origin)}, {"worst", worst_json(r)}, {"inputs", inputs_json(r)}});
            if (r.truth) {
                n["truth"] = {{"reference_nmse", number(r.truth->reference.nmse)},
                              {"reference_max_abs", number(r.truth->reference.max_abs)},
                              {"target_nmse", number(r.truth->target.nmse)},
                              {"target_max_abs", number(r.truth->target.max_abs)},
                              {"closer", r.truth->closer()}};
            }
        } else {
            n.update({{"skipped", r.skip_reason}});
        }
        nodes.push_back(std::move(n));
    }
    nlohmann::ordered_json first = nullptr;
    if (const NodeResult* r = first_divergent_node()) {
        first = {{"index", r->index}, {"name", r->name}, {"op", r->op}, {"origin", origin_name(r->origin)},
                 {"worst", worst_json(*r)}, {"inputs", inputs_json(*r)}};
    }
    return {{"backends", {reference_, target_}},
            {"truth", truth_.empty() ? nlohmann::ordered_json(nullptr) : nlohmann::ordered_json(truth_)},
            {"mode", mode_},
            {"compared", compared_},
            {"skipped", skipped_},
            {"passed", compared_ - failed_},
            {"failed", failed_},
            {"introduced", introduced_},
            {"inherited", inherited_},
            {"first_divergent", first_divergent_ ? nlohmann::ordered_json(*first_divergent_) : nlohmann::ordered_json(nullptr)},
            {"first_divergent_node", std::move(first)},
            {"end_to_end", end_to_end_json()},
            {"nodes", std::move(nodes)}};
}

nlohmann::ordered_json CompareReport::end_to_end_json() const {
    if (outputs_.empty()) return {{"judged", false}, {"reason", end_to_end_skipped_}};
    nlohmann::ordered_json outputs = nlohmann::ordered_json::array();
    for (const OutputResult& o : outputs_) {
        nlohmann::ordered_json j = {{"index", o.index}, {"name", o.name}, {"kind", o.kind}};
        if (o.metrics) {
            j.update({{"nmse", number(o.metrics->nmse)}, {"nan_inf", o.metrics->nan_count + o.metrics->inf_mismatch}});
        }
        j.update({{"reference_error", number(o.reference_error)}, {"tolerance", number(o.tolerance)}, {"ok", o.ok}});
        outputs.push_back(std::move(j));
    }
    nlohmann::ordered_json growth = nullptr;
    if (growth_) {
        growth = {{"index", growth_->index}, {"name", growth_->name}, {"op", growth_->op},
                  {"excess", number(growth_->excess)}, {"jump", number(growth_->jump)}};
    }
    return {{"judged", true}, {"ok", !end_to_end_failed()}, {"margin", margin_}, {"basis", budget_basis_},
            {"outputs", std::move(outputs)},
            {"growth_node", std::move(growth)}};
}

}  // namespace xb::tools
