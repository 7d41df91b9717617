// xb-example: builds a small graph, allocates it in a CPU buffer, computes it and prints the result.
//   y = softmax(silu(W x + b))     W [4 x 6], x [6], b [4]
#include <cstdio>
#include <vector>

#include "alloc/context_alloc.hpp"
#include "backend/registry.hpp"
#include "backend/tensor_io.hpp"
#include "builtin/builtin_backends.hpp"
#include "core/graph.hpp"
#include "core/ops.hpp"

namespace {

int fail(const xb::Status& status) {
    std::fprintf(stderr, "xb-example: %s\n", status.to_string().c_str());
    return 1;
}

}  // namespace

int main() {
    auto backend = xb::global_registry().init_by_name("CPU");
    if (!backend) return fail(backend.status());

    xb::Context ctx;
    xb::Tensor* w = ctx.new_tensor(xb::DType::F32, {6, 4});
    xb::Tensor* x = ctx.new_tensor(xb::DType::F32, {6});
    xb::Tensor* b = ctx.new_tensor(xb::DType::F32, {4});
    w->name = "W";
    x->name = "x";
    b->name = "b";
    xb::Tensor* y = xb::soft_max(ctx, xb::silu(ctx, xb::add(ctx, xb::mul_mat(ctx, w, x), b)));
    y->name = "y";
    y->set_output();

    auto graph = xb::Graph::build({y});
    if (!graph) return fail(graph.status());
    auto buffer = xb::alloc_ctx_tensors(ctx, **backend);
    if (!buffer) return fail(buffer.status());

    std::vector<float> wv(24), xv(6), bv = {0.1f, -0.2f, 0.3f, -0.4f};
    for (size_t i = 0; i < wv.size(); ++i) wv[i] = 0.05f * static_cast<float>(static_cast<int>(i % 7) - 3);
    for (size_t i = 0; i < xv.size(); ++i) xv[i] = 0.5f * static_cast<float>(i) - 1.0f;
    for (auto [t, v] : {std::pair{w, &wv}, std::pair{x, &xv}, std::pair{b, &bv}}) {
        if (auto s = xb::tensor_set_f32(*t, *v); !s) return fail(s);
    }

    if (auto s = (*backend)->graph_compute(*graph); !s) return fail(s);
    auto out = xb::tensor_get_f32(*y);
    if (!out) return fail(out.status());

    graph->print();
    std::printf("y = softmax(silu(W x + b)) on %s:", (*backend)->device().description().c_str());
    for (float v : *out) std::printf(" %.6f", v);
    std::printf("\n");
    return 0;
}
