#include "opcheck/case_graph.hpp"

#include <algorithm>
#include <utility>

namespace xb::opcheck {

namespace {

// A leaf that a cpy overwrites completely (cast's own destination): its initial bytes never matter.
bool is_cpy_destination(const Graph& graph, const Tensor* leaf) {
    return std::any_of(graph.nodes().begin(), graph.nodes().end(),
                       [leaf](const Tensor* n) { return n->op == Op::Cpy && n->src[1] == leaf; });
}

// Every other leaf must be a declared input: an unfilled leaf would make the result depend on garbage.
Status check_leafs_declared(const Graph& graph, const CaseBuilder& b) {
    for (const Tensor* leaf : graph.leafs()) {
        const bool declared = std::any_of(b.inputs().begin(), b.inputs().end(),
                                          [leaf](const InputSpec& in) { return in.tensor == leaf; });
        if (!declared && !is_cpy_destination(graph, leaf)) {
            return Status(StatusCode::Internal, "case leaf '" + leaf->display_name() + "' is not a declared input");
        }
    }
    return Status::ok();
}

}  // namespace

CaseGraph::CaseGraph(const OpCase& c, std::unique_ptr<Context> ctx, std::unique_ptr<CaseBuilder> builder, Graph graph,
                     Tensor* output)
    : source_(&c), ctx_(std::move(ctx)), builder_(std::move(builder)), graph_(std::move(graph)), output_(output) {}

Result<CaseGraph> CaseGraph::build(const OpCase& c) {
    auto ctx = std::make_unique<Context>();
    auto builder = std::make_unique<CaseBuilder>(*ctx);
    Tensor* out = c.build(*builder);
    out->set_output();
    XB_ASSIGN_OR_RETURN(Graph graph, Graph::build({out}));
    XB_RETURN_IF_ERROR(check_leafs_declared(graph, *builder));
    return CaseGraph(c, std::move(ctx), std::move(builder), std::move(graph), out);
}

std::string CaseGraph::unsupported_on(const Device& device) const {
    for (const Tensor* node : graph_.nodes()) {
        // The device's reason, with the node's shape (op-check's cases differ by shape).
        if (std::string why = device.unsupported_reason(*node); !why.empty()) return why + " (" + node->shape_string() + ")";
    }
    return {};
}

}  // namespace xb::opcheck
