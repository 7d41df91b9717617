#include "node_checks.hpp"

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

// A node's state; a view node's is its sources' (views are not computed, so never set).
bool Divergence::bad(const Tensor* t) const {
    const GraphRef r = graph_.ref_of(t);
    if (!r.is_node()) return false;
    if (op_is_view(t->op)) return any_source_bad(*t);
    return bad_[static_cast<size_t>(r.index())] != 0;
}

bool Divergence::any_source_bad(const Tensor& node) const {
    for (const Tensor* src : node.src) {
        if (src != nullptr && bad(src)) return true;
    }
    return false;
}

}  // namespace xb::tools
