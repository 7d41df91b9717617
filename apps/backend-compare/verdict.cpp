#include "verdict.hpp"

#include <algorithm>
#include <cmath>
#include <limits>

#include "backend/tensor_io.hpp"
#include "node_checks.hpp"

namespace xb::tools {

namespace {

// A node's budget: `margin` times the reference's own error there, and for a float result at least
// that of one f32 rounding (a path of exact copies still rounds once where two backends convert
// differently).
double budget_of(const Tensor& node, double propagated, double margin) {
    const double u = unit_roundoff(DType::F32);
    const bool floats = is_float_type(node.type) || is_quantized(node.type);
    return margin * std::max(propagated, floats ? u * u / 3.0 : 0.0);
}

// How far a compared node is over its budget (infinite for a NaN/Inf mismatch or any error where
// the budget is 0); 0 for a node not compared.
double excess_of(const NodeResult* r) {
    if (r == nullptr || !r->metrics || !r->budget) return 0.0;
    const report::ErrorMetrics& m = *r->metrics;
    if (m.nan_count + m.inf_mismatch > 0) return std::numeric_limits<double>::infinity();
    if (*r->budget > 0.0) return m.nmse / *r->budget;
    return m.nmse > 0.0 ? std::numeric_limits<double>::infinity() : 0.0;
}

// The node index of the computed tensor behind `t` (a view's storage); -1 for a leaf.
int computed_index(const Graph& graph, const Tensor* t) {
    while (t != nullptr && op_is_view(t->op)) t = t->view_src != nullptr ? t->view_src : t->src[0];
    const GraphRef r = graph.ref_of(t);
    return r.is_node() ? r.index() : -1;
}

// The largest excess among what node i reads (Carriers: views looked through, a cache's writers);
// 0 when none is over.
double sources_excess(const Carriers& carriers, int i, const CompareReport& report) {
    double worst = 0.0;
    for (const int c : carriers.of(i)) worst = std::max(worst, excess_of(report.node(c)));
    return worst;
}

std::optional<GrowthNode> growth_node(const Graph& graph, const CompareReport& report) {
    const Carriers carriers(graph);
    std::optional<GrowthNode> best;
    for (const NodeResult& r : report.nodes()) {
        const double excess = excess_of(&r);
        if (!(excess > 1.0)) continue;
        const double carried = sources_excess(carriers, r.index, report);
        // An infinite excess (a NaN/Inf mismatch, ids that differ where the budget is 0) is the
        // largest jump from inputs within their budgets, and no jump from inputs already beyond.
        const double jump = std::isinf(excess) ? (carried <= 1.0 ? excess : 1.0) : excess / std::max(1.0, carried);
        if (!best || jump > best->jump) best = GrowthNode{r.index, r.name, r.op, excess, jump};
    }
    return best;
}

}  // namespace

Result<std::vector<LeafBytes>> snapshot_states(const config::Model& model) {
    std::vector<LeafBytes> out;
    for (const Tensor* state : model.states) {
        LeafBytes b{state, std::vector<std::byte>(state->nbytes())};
        XB_RETURN_IF_ERROR(tensor_get(*state, b.bytes.data(), 0, b.bytes.size()));
        out.push_back(std::move(b));
    }
    return out;
}

Result<ErrorBudget> reference_budget(Backend& backend, const config::Model& model, std::span<const LeafBytes> start) {
    int64_t smallest = std::numeric_limits<int64_t>::max();
    for (const Tensor* o : model.outputs) smallest = std::min(smallest, std::max<int64_t>(o->nelements(), 1));
    const int draws = static_cast<int>(std::clamp<int64_t>((64 + smallest - 1) / smallest, 1, 8));
    return propagate_own_error(backend, model.graph, draws, model.seed ^ 0x5eed0fe11a7e5ULL, start);
}

void judge_end_to_end(const config::Model& model, const ErrorBudget& budget, double margin, CompareReport& report) {
    const Graph& graph = model.graph;
    report.set_margin(margin);
    std::vector<int> compared;
    for (const NodeResult& r : report.nodes()) {
        if (r.metrics) compared.push_back(r.index);
    }
    for (const int i : compared) {
        report.set_budget(i, budget_of(*graph.node(i), budget.propagated[static_cast<size_t>(i)], margin));
    }
    std::vector<int> judged;  // outputs that are views of one node count once
    for (const Tensor* o : model.outputs) {
        const int i = computed_index(graph, o);
        if (i < 0 || std::find(judged.begin(), judged.end(), i) != judged.end()) continue;
        judged.push_back(i);
        const Tensor& node = *graph.node(i);
        const NodeResult* r = report.node(i);
        OutputResult out;
        out.index = i;
        out.name = node.display_name();
        out.kind = is_float_type(node.type) || is_quantized(node.type) ? "float" : "integer";
        if (r != nullptr) out.metrics = r->metrics;
        out.reference_error = budget.propagated[static_cast<size_t>(i)];
        out.tolerance = budget_of(node, out.reference_error, margin);
        out.ok = !out.metrics || within_tolerance(*out.metrics, out.tolerance);
        report.add_output(std::move(out));
    }
    if (auto growth = growth_node(graph, report)) report.set_growth(std::move(*growth));
}

}  // namespace xb::tools
