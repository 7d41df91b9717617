#include "node_checks.hpp"

#include <algorithm>
#include <cmath>

#include "backend/registry.hpp"
#include "backend/tensor_io.hpp"
#include "builtin/builtin_backends.hpp"
#include "product_rounding.hpp"

namespace xb::tools {

Result<report::ErrorMetrics> metrics_of(const Tensor& target, const Tensor& reference) {
    XB_ASSIGN_OR_RETURN(auto a, tensor_get_f32(target));
    XB_ASSIGN_OR_RETURN(auto b, tensor_get_f32(reference));
    return report::compare(a, b);
}

std::vector<InputError> input_errors(const Tensor& reference_node, const Tensor& target_node) {
    std::vector<InputError> inputs;
    for (int j = 0; j < kMaxSrc; ++j) {
        if (reference_node.src[j] == nullptr || target_node.src[j] == nullptr) continue;
        auto m = metrics_of(*target_node.src[j], *reference_node.src[j]);
        if (m.is_ok()) inputs.push_back({j, reference_node.src[j]->display_name(), *m});
    }
    return inputs;
}

namespace {

double nmse_or_nan(const report::ErrorMetrics& m) {
    return m.nan_count == 0 && m.inf_mismatch == 0 ? m.nmse : std::nan("");
}

// The tensor that holds t's bytes: t, or the end of its view chain.
const Tensor& storage_of(const Tensor& t) {
    const Tensor* s = &t;
    while (s->view_src != nullptr) s = s->view_src;
    return *s;
}

}  // namespace

Carriers::Carriers(const Graph& graph) : graph_(graph) {
    for (int i = 0; i < graph.n_nodes(); ++i) {
        const Tensor& node = *graph.node(i);
        if (op_is_view(node.op) || node.view_src == nullptr) continue;
        const Tensor& storage = storage_of(node);
        if (graph.ref_of(&storage).is_leaf()) writers_[&storage].push_back(i);
    }
}

void Carriers::add(const Tensor* src, int reader, std::vector<int>& out) const {
    while (src != nullptr && op_is_view(src->op)) src = src->view_src != nullptr ? src->view_src : src->src[0];
    if (src == nullptr) return;
    const GraphRef r = graph_.ref_of(src);
    if (r.is_node()) {
        out.push_back(r.index());
    } else if (const auto it = writers_.find(src); it != writers_.end()) {
        for (const int w : it->second) {
            if (w < reader) out.push_back(w);
        }
    }
}

std::vector<int> Carriers::of(int i) const {
    std::vector<int> out;
    for (const Tensor* src : graph_.node(i)->src) add(src, i, out);
    std::sort(out.begin(), out.end());
    out.erase(std::unique(out.begin(), out.end()), out.end());
    return out;
}

void Divergence::set(int i, const report::ErrorMetrics& m, double tolerance) {
    nodes_[static_cast<size_t>(i)] = {!within_tolerance(m, tolerance), nmse_or_nan(m)};
}

Origin Divergence::origin_from_sources(int i, const report::ErrorMetrics& m, double tolerance) const {
    State carried;  // bad if any source is; NMSE summed (NaN, a NaN/Inf mismatch, stays NaN)
    for (const int c : carriers_.of(i)) {
        const State& s = nodes_[static_cast<size_t>(c)];
        carried.bad = carried.bad || s.bad;
        carried.nmse += s.nmse;
    }
    const double nmse = nmse_or_nan(m);
    if (carried.bad || std::isnan(carried.nmse)) return Origin::Inherited;
    const bool inputs_differed = carried.nmse > tolerance;
    const bool within_growth = nmse <= kCarriedGrowth * carried.nmse;  // false for a NaN nmse
    return inputs_differed && within_growth ? Origin::Inherited : Origin::Introduced;
}

Status check_fault_devices(const std::vector<ResolvedFault>& faults, const std::vector<std::string>& devices,
                           const std::string& what) {
    for (const ResolvedFault& f : faults) {
        if (std::find(devices.begin(), devices.end(), f.device) == devices.end()) {
            return Status(StatusCode::InvalidArgument, "-P " + f.given + ": " + f.device + " takes no part in " + what +
                                                           ", so its fault would inject nothing");
        }
    }
    return Status::ok();
}

Status check_faults_injected(const std::vector<ResolvedFault>& faults, const CompareReport& report) {
    for (const ResolvedFault& f : faults) {
        const NodeResult* r = report.node(f.index);
        if (r == nullptr) continue;  // not reached (the run stopped before it)
        const std::string node = "node #" + std::to_string(f.index) + " '" + r->name + "'";
        if (!r->metrics) {
            return Status(StatusCode::InvalidArgument, "-P " + f.given + ": " + node + " was not computed (" +
                                                           r->skip_reason + "), so the fault injected nothing");
        }
        if (!r->device.empty() && r->device != f.device) {
            return Status(StatusCode::InvalidArgument, "-P " + f.given + ": " + node + " runs on " + r->device +
                                                           " in this placement, so " + f.device +
                                                           "'s fault injected nothing; fault a node " + f.device +
                                                           " computes (the report's device column)");
        }
    }
    return Status::ok();
}

Result<double> LiveJudge::tolerance_of(const Tensor& node, const report::ErrorMetrics& m) const {
    const double tolerance = tol_.for_node(node);
    if (within_tolerance(m, tolerance)) return tolerance;
    XB_ASSIGN_OR_RETURN(const std::optional<double> rounding, activation_rounding_nmse(node));
    return rounding ? std::max(tolerance, kActivationRoundingMargin * *rounding) : tolerance;
}

bool LiveJudge::operator()(const NodeComparison& node) {
    Result<bool> go_on = judge(node);
    if (!go_on.is_ok()) {
        status_ = go_on.status();
        return false;
    }
    return *go_on;
}

Result<bool> LiveJudge::judge(const NodeComparison& n) {
    const Tensor& want = *n.t1;
    if (!n.supported) {
        // The target device's own reason (ggml's devices say which of ggml's rules refused it).
        const Device* target = global_registry().dev_by_name(options_.target);
        std::string why = target != nullptr ? target->unsupported_reason(*n.t2) : std::string();
        report_.add_skip(n.index, want, why.empty() ? options_.target + " does not support " + want.op_label() : why);
        return true;
    }
    if (options_.save != nullptr) XB_RETURN_IF_ERROR(options_.save->add(*n.t2));
    XB_ASSIGN_OR_RETURN(report::ErrorMetrics m, metrics_of(*n.t2, want));
    XB_ASSIGN_OR_RETURN(const double tolerance, tolerance_of(want, m));
    const bool ok = report_.add(n.index, want, m, tolerance);
    divergence_.set(n.index, m, tolerance);
    if (n.truth != nullptr) {
        XB_ASSIGN_OR_RETURN(report::ErrorMetrics reference, metrics_of(want, *n.truth));
        XB_ASSIGN_OR_RETURN(report::ErrorMetrics target, metrics_of(*n.t2, *n.truth));
        reference_vs_truth_[static_cast<size_t>(n.index)] = reference.nmse;
        report_.set_truth({reference, target});
    }
    if (ok) return true;
    Origin origin = Origin::Introduced;
    if (options_.isolated) {
        // Computed from the reference's inputs already: the error is the node's own.
    } else if (n.recompute_from_reference) {
        XB_ASSIGN_OR_RETURN(const Tensor* alone, n.recompute_from_reference());
        XB_ASSIGN_OR_RETURN(report::ErrorMetrics again, metrics_of(*alone, want));
        if (within_tolerance(again, tolerance)) origin = Origin::Inherited;
    } else {
        origin = divergence_.origin_from_sources(n.index, m, tolerance);
    }
    report_.explain(origin, options_.inputs_readable ? input_errors(want, *n.t2) : std::vector<InputError>{});
    stopped_ = origin == Origin::Introduced && options_.stop_at_first;
    return !stopped_;
}

}  // namespace xb::tools
