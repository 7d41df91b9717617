#include "bench_util.hpp"

#include <cstdlib>
#include <vector>

#include "backend/registry.hpp"
#include "backend/tensor_io.hpp"
#include "builtin/builtin_backends.hpp"

namespace bench {

std::unique_ptr<xb::Backend> cpu_backend() {
    auto b = xb::global_registry().init_by_name("CPU");
    if (!b.is_ok()) std::abort();
    return std::move(b).value();
}

void fill_random(xb::Tensor& t, std::mt19937& rng, float lo, float hi) {
    std::uniform_real_distribution<float> dist(lo, hi);
    std::vector<float> v(static_cast<size_t>(t.nelements()));
    for (float& x : v) x = dist(rng);
    if (!xb::tensor_set_f32(t, v).is_ok()) std::abort();
}

void run_graph(benchmark::State& state, xb::Backend& backend, const xb::Graph& graph, double flops) {
    for (auto _ : state) {
        if (!backend.graph_compute(graph).is_ok()) state.SkipWithError("graph_compute failed");
    }
    if (flops > 0) state.counters["GFLOPS"] = benchmark::Counter(flops * 1e-9, benchmark::Counter::kIsIterationInvariantRate);
}

size_t bytes_moved(const xb::Tensor& node) {
    size_t bytes = node.nbytes();
    for (const xb::Tensor* src : node.src) {
        if (src != nullptr) bytes += src->nbytes();
    }
    if (node.op == xb::Op::GetRows) {
        bytes -= node.src[0]->nbytes();
        bytes += static_cast<size_t>(node.nelements()) * xb::type_size(node.src[0]->type);
    }
    return bytes;
}

}  // namespace bench
