#include "node_checks.hpp"

#include <cmath>

#include "backend/tensor_io.hpp"

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

}  // namespace

void Divergence::set(int i, const report::ErrorMetrics& m, double tolerance) {
    nodes_[static_cast<size_t>(i)] = {!within_tolerance(m, tolerance), nmse_or_nan(m)};
}

// A node's state; a view's is its sources' (views are not computed, so never set); leafs and
// tensors outside the graph agree.
Divergence::State Divergence::state_of(const Tensor* t) const {
    const GraphRef r = graph_.ref_of(t);
    if (!r.is_node()) return {};
    if (op_is_view(t->op)) return sources_of(*t);
    return nodes_[static_cast<size_t>(r.index())];
}

Divergence::State Divergence::sources_of(const Tensor& node) const {
    State carried;
    for (const Tensor* src : node.src) {
        if (src == nullptr) continue;
        const State s = state_of(src);
        carried.bad = carried.bad || s.bad;
        carried.nmse += s.nmse;  // NaN (a NaN/Inf mismatch) stays NaN
    }
    return carried;
}

Origin Divergence::origin_from_sources(const Tensor& node, const report::ErrorMetrics& m, double tolerance) const {
    const State carried = sources_of(node);
    const double nmse = nmse_or_nan(m);
    if (carried.bad || std::isnan(carried.nmse)) return Origin::Inherited;
    const bool inputs_differed = carried.nmse > tolerance;
    const bool within_growth = nmse <= kCarriedGrowth * carried.nmse;  // false for a NaN nmse
    return inputs_differed && within_growth ? Origin::Inherited : Origin::Introduced;
}

Result<report::ErrorMetrics> IsolatedRecheck::recompute(int i) {
    const Tensor& want = *reference_.node(i);
    if (!copy_) {
        // Made now, the copy already holds every tensor as the reference has it.
        XB_ASSIGN_OR_RETURN(GraphCopy copy, graph_copy(target_, reference_));
        copy_.emplace(std::move(copy));
    } else {
        // The reference's inputs, through the memory they view; leafs too, since a graph may write
        // into one (a KV cache).
        for (const Tensor* src : want.src) {
            if (src == nullptr) continue;
            const Tensor& storage = src->view_src != nullptr ? *src->view_src : *src;  // a view's is its source's
            const GraphRef r = reference_.ref_of(&storage);
            if (!r.in_graph()) continue;
            const auto index = static_cast<size_t>(r.index());
            Tensor& mine = *(r.is_node() ? copy_->graph.nodes() : copy_->graph.leafs())[index];
            XB_RETURN_IF_ERROR(tensor_copy(storage, mine));
        }
    }
    XB_RETURN_IF_ERROR(target_.graph_compute(copy_->graph.view(i, i + 1)));
    return metrics_of(*copy_->graph.node(i), want);
}

}  // namespace xb::tools
