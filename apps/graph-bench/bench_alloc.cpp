// Graph allocator benchmarks: the compute buffer it plans for reference graphs next to the bytes
// with no reuse and the lower bound for the node order, and the time to reserve and to alloc_graph.
// Weights (and KV caches) live in their own buffer, outside the compute buffer, as in an engine.
#include <benchmark/benchmark.h>

#include <chrono>
#include <memory>
#include <vector>

#include "alloc/allocation_checker.hpp"
#include "alloc/allocation_stats.hpp"
#include "alloc/context_alloc.hpp"
#include "alloc/graph_allocator.hpp"
#include "backend/registry.hpp"
#include "bench_util.hpp"
#include "builtin/builtin_backends.hpp"
#include "models/decoder.hpp"
#include "models/mlp.hpp"

namespace bench {
namespace {

struct AllocCase {
    xb::Context ctx;
    xb::Graph graph;
    std::unique_ptr<xb::MultiBuffer> weights;
};

xb::BufferType& cpu_buft() { return xb::global_registry().dev_by_name("CPU")->buffer_type(); }

std::unique_ptr<AllocCase> finish(std::unique_ptr<AllocCase> c, std::span<xb::Tensor* const> outputs,
                                  std::span<xb::Tensor* const> weights) {
    auto graph = xb::Graph::build(outputs);
    auto buffer = xb::alloc_tensors(weights, cpu_buft());
    if (!graph.is_ok() || !buffer.is_ok()) return nullptr;
    c->graph = std::move(graph).value();
    c->weights = std::move(buffer).value();
    return c;
}

std::unique_ptr<AllocCase> decoder_case(int n_tokens) {
    auto c = std::make_unique<AllocCase>();
    xb::DecoderParams p;
    p.n_tokens = n_tokens;
    p.n_kv = 256;
    auto m = xb::build_decoder(c->ctx, p);
    if (!m.is_ok()) return nullptr;
    return finish(std::move(c), m->graph_outputs, m->weights());
}

std::unique_ptr<AllocCase> mlp_case() {
    auto c = std::make_unique<AllocCase>();
    auto m = xb::build_mlp(c->ctx, xb::MlpParams{});
    if (!m.is_ok()) return nullptr;
    std::vector<xb::Tensor*> outputs{m->output};
    return finish(std::move(c), outputs, m->weights);
}

std::unique_ptr<AllocCase> make_case(int which) {
    switch (which) {
        case 0: return mlp_case();
        case 1: return decoder_case(32);
        default: return decoder_case(1);
    }
}

const char* case_name(int which) {
    switch (which) {
        case 0: return "mlp_4x1024x4096_b32";
        case 1: return "llama_decoder_t32_kv256";
        default: return "llama_decoder_t1_kv256";
    }
}

// The figures that do not depend on time: buffer, no-reuse and lower-bound bytes.
void report_sizes(benchmark::State& state, const AllocCase& c, const xb::GraphAllocator& galloc) {
    const xb::Buffer* buffer = galloc.buffer(0);
    auto stats = xb::measure_allocation(c.graph, std::span<const xb::Buffer* const>(&buffer, 1));
    if (!stats.is_ok() || !xb::check_graph_allocation(c.graph).is_ok()) return state.SkipWithError("invalid allocation");
    state.counters["n_nodes"] = c.graph.n_nodes();
    state.counters["n_leafs"] = c.graph.n_leafs();
    state.counters["buffer_bytes"] = static_cast<double>(galloc.buffer_size(0));
    state.counters["naive_bytes"] = static_cast<double>(stats->placed_bytes);
    state.counters["lower_bound_bytes"] = static_cast<double>(stats->lower_bound_bytes);
    state.SetLabel(case_name(static_cast<int>(state.range(0))));
}

// reserve on a fresh allocator: planning plus allocating the buffer.
void BM_AllocReserve(benchmark::State& state) {
    auto c = make_case(static_cast<int>(state.range(0)));
    if (c == nullptr) return state.SkipWithError("graph setup failed");
    for (auto _ : state) {
        xb::GraphAllocator galloc(cpu_buft());
        if (!galloc.reserve(c->graph).is_ok()) state.SkipWithError("reserve failed");
    }
    xb::GraphAllocator galloc(cpu_buft());
    if (!galloc.alloc_graph(c->graph).is_ok()) return state.SkipWithError("alloc_graph failed");
    report_sizes(state, *c, galloc);
}

// alloc_graph of an already planned graph: what an engine pays per step.
void BM_AllocGraph(benchmark::State& state) {
    auto c = make_case(static_cast<int>(state.range(0)));
    if (c == nullptr) return state.SkipWithError("graph setup failed");
    xb::GraphAllocator galloc(cpu_buft());
    if (!galloc.reserve(c->graph).is_ok()) return state.SkipWithError("reserve failed");
    for (auto _ : state) {
        if (!galloc.alloc_graph(c->graph).is_ok()) state.SkipWithError("alloc_graph failed");
    }
    report_sizes(state, *c, galloc);
    // Seconds per node: (nodes * iterations / time)^-1.
    state.counters["sec_per_node"] = benchmark::Counter(
        static_cast<double>(c->graph.n_nodes()), benchmark::Counter::kIsIterationInvariantRate | benchmark::Counter::kInvert);
}

BENCHMARK(BM_AllocReserve)->DenseRange(0, 2)->Unit(benchmark::kMicrosecond);
BENCHMARK(BM_AllocGraph)->DenseRange(0, 2)->Unit(benchmark::kMicrosecond);

}  // namespace
}  // namespace bench
