// Scheduler overhead: split + assign + allocate (no compute) per graph node, for the decoder of
// the allocator benchmarks at 4, 16 and 64 layers, on [BLAS, CPU] and on [SIM0, CPU] with half
// the layers' weights on SIM0.
#include <benchmark/benchmark.h>

#include <memory>
#include <vector>

#include "alloc/context_alloc.hpp"
#include "backend/registry.hpp"
#include "bench_util.hpp"
#include "builtin/builtin_backends.hpp"
#include "models/decoder.hpp"
#include "sched/scheduler.hpp"

namespace bench {
namespace {

struct SchedCase {
    std::unique_ptr<xb::Backend> accel;
    std::unique_ptr<xb::Backend> cpu;
    xb::Context ctx;
    xb::Graph graph;
    std::vector<std::unique_ptr<xb::MultiBuffer>> weights;
    std::unique_ptr<xb::Scheduler> sched;
};

// Places a list of weights on a backend, marked as weights (contents do not matter here).
bool place(SchedCase& c, const std::vector<xb::Tensor*>& tensors, xb::Backend& backend) {
    auto buf = xb::alloc_tensors(tensors, backend.default_buffer_type());
    if (!buf.is_ok()) return false;
    (*buf)->set_usage(xb::BufferUsage::Weights);
    c.weights.push_back(std::move(buf).value());
    return true;
}

// accel "BLAS": every weight on the CPU; accel "SIM0": the last half of the layers on SIM0.
std::unique_ptr<SchedCase> make_case(const char* accel, int n_layers) {
    auto c = std::make_unique<SchedCase>();
    auto a = xb::global_registry().init_by_name(accel);
    if (!a.is_ok()) return nullptr;
    c->accel = std::move(a).value();
    c->cpu = cpu_backend();
    xb::DecoderParams p;
    p.n_layers = n_layers;
    p.n_kv = 256;
    auto m = xb::build_decoder(c->ctx, p);
    if (!m.is_ok()) return nullptr;
    std::vector<xb::Tensor*> on_cpu = {m->tok_embd, m->out_norm, m->output};
    std::vector<xb::Tensor*> on_accel;
    const bool split_layers = std::string(accel) != "BLAS";
    for (size_t il = 0; il < m->layers.size(); ++il) {
        const xb::LayerWeights& l = m->layers[il];
        auto& dst = split_layers && il >= m->layers.size() / 2 ? on_accel : on_cpu;
        dst.insert(dst.end(), {l.attn_norm, l.wq, l.wk, l.wv, l.wo, l.ffn_norm, l.w_gate, l.w_up, l.w_down,
                               m->k_cache[il], m->v_cache[il]});
    }
    if (!place(*c, on_cpu, *c->cpu) || (!on_accel.empty() && !place(*c, on_accel, *c->accel))) return nullptr;
    auto g = xb::Graph::build(m->graph_outputs);
    auto s = xb::Scheduler::create({c->accel.get(), c->cpu.get()});
    if (!g.is_ok() || !s.is_ok()) return nullptr;
    c->graph = std::move(g).value();
    c->sched = std::move(s).value();
    return c;
}

void BM_SchedAllocGraph(benchmark::State& state, const char* accel) {
    auto c = make_case(accel, static_cast<int>(state.range(0)));
    if (c == nullptr) return state.SkipWithError("setup failed (device missing?)");
    if (!c->sched->reserve(c->graph).is_ok()) return state.SkipWithError("reserve failed");
    for (auto _ : state) {
        c->sched->reset();
        if (!c->sched->alloc_graph(c->graph).is_ok()) state.SkipWithError("alloc_graph failed");
    }
    state.counters["n_nodes"] = c->graph.n_nodes();
    state.counters["n_splits"] = c->sched->n_splits();
    state.counters["sec_per_node"] = benchmark::Counter(
        static_cast<double>(c->graph.n_nodes()), benchmark::Counter::kIsIterationInvariantRate | benchmark::Counter::kInvert);
    state.SetLabel(std::string(accel) + "+CPU layers=" + std::to_string(state.range(0)));
}

BENCHMARK_CAPTURE(BM_SchedAllocGraph, blas_cpu, "BLAS")->Arg(4)->Arg(16)->Arg(64)->Unit(benchmark::kMicrosecond)->UseRealTime();
BENCHMARK_CAPTURE(BM_SchedAllocGraph, sim_cpu, "SIM0")->Arg(4)->Arg(16)->Arg(64)->Unit(benchmark::kMicrosecond)->UseRealTime();

}  // namespace
}  // namespace bench
