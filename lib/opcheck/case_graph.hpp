// A case's graph, built in its own context: the step between an OpCase (a recipe) and running it
// on a backend (case_runner.hpp), and what op-check inspects to name, filter and cost a case.
#pragma once

#include <memory>
#include <string>

#include "backend/device.hpp"
#include "core/context.hpp"
#include "core/graph.hpp"
#include "opcheck/op_case.hpp"

namespace xb::opcheck {

class CaseGraph {
public:
    // Builds the case's graph (output marked as the graph output); the builder's first error, or
    // Internal when a leaf that the result depends on is not a declared input.
    static Result<CaseGraph> build(const OpCase& c);

    const OpCase& source() const { return *source_; }
    Context& ctx() const { return *ctx_; }
    const CaseBuilder& builder() const { return *builder_; }
    const Graph& graph() const { return graph_; }
    Tensor& output() const { return *output_; }

    // The first node that `device` cannot compute, described ("SIM0 does not support rope [..]");
    // empty when it can compute them all.
    std::string unsupported_on(const Device& device) const;

private:
    CaseGraph(const OpCase& c, std::unique_ptr<Context> ctx, std::unique_ptr<CaseBuilder> builder, Graph graph,
              Tensor* output);

    const OpCase* source_;
    std::unique_ptr<Context> ctx_;           // owns the tensors; heap-held so that moves keep them in place
    std::unique_ptr<CaseBuilder> builder_;   // points into ctx_
    Graph graph_;
    Tensor* output_;
};

}  // namespace xb::opcheck
