// The llama-style decoder of the foundation issue on the CPU backend.
#include <benchmark/benchmark.h>

#include <vector>

#include "alloc/context_alloc.hpp"
#include "backend/tensor_io.hpp"
#include "bench_util.hpp"
#include "backend/registry.hpp"
#include "builtin/builtin_backends.hpp"
#include "config/llama_decoder.hpp"
#include "sched/scheduler.hpp"

namespace bench {
namespace {

// The 4-layer llama-style decoder of the foundation issue (n_embd 1024, n_ff 2816, 32 tokens,
// 32000-wide output) on the CPU backend.
void BM_LlamaDecoder(benchmark::State& state, xb::DType weight_type, bool flash_attn) {
    xb::LlamaParams p;
    p.weight_type = weight_type;
    p.flash_attn = flash_attn;
    auto backend = cpu_backend();
    xb::Context ctx;
    auto model = xb::build_llama_decoder(ctx, p);
    if (!model.is_ok()) return state.SkipWithError(model.status().to_string().c_str());
    auto graph = xb::Graph::build(model->graph_outputs);
    auto buffer = xb::alloc_ctx_tensors(ctx, *backend);
    if (!graph.is_ok() || !buffer.is_ok()) return state.SkipWithError("setup failed");
    if (!fill_decoder(p, *model)) return state.SkipWithError("input setup failed");
    run_graph(state, *backend, *graph, p.matmul_flops());
    state.counters["nodes"] = graph->n_nodes();
}

// The same decoder through the scheduler on [accel, CPU], weights in a CPU weights buffer, so the
// accelerator takes what it supports (BLAS: the matrix products) and the CPU the rest.
void BM_LlamaDecoderSched(benchmark::State& state, const char* accel) {
    xb::LlamaParams p;
    auto a = xb::global_registry().init_by_name(accel);
    if (!a.is_ok()) return state.SkipWithError("device missing");
    auto cpu = cpu_backend();
    xb::Context ctx;
    auto model = xb::build_llama_decoder(ctx, p);
    if (!model.is_ok()) return state.SkipWithError(model.status().to_string().c_str());
    auto weights = xb::alloc_tensors(model->weights(), cpu->default_buffer_type());
    auto graph = xb::Graph::build(model->graph_outputs);
    auto sched = xb::Scheduler::create({a->get(), cpu.get()});
    if (!weights.is_ok() || !graph.is_ok() || !sched.is_ok()) return state.SkipWithError("setup failed");
    (*weights)->set_usage(xb::BufferUsage::Weights);
    if (!(*sched)->alloc_graph(*graph).is_ok() || !fill_decoder(p, *model)) return state.SkipWithError("alloc failed");
    for (auto _ : state) {
        if (!(*sched)->graph_compute(*graph).is_ok()) state.SkipWithError("compute failed");
    }
    state.counters["GFLOPS"] = benchmark::Counter(p.matmul_flops() * 1e-9, benchmark::Counter::kIsIterationInvariantRate);
    state.counters["splits"] = (*sched)->n_splits();
}

BENCHMARK_CAPTURE(BM_LlamaDecoder, f32_flash, xb::DType::F32, true)->Unit(benchmark::kMillisecond)->UseRealTime();
BENCHMARK_CAPTURE(BM_LlamaDecoder, f16_flash, xb::DType::F16, true)->Unit(benchmark::kMillisecond)->UseRealTime();
BENCHMARK_CAPTURE(BM_LlamaDecoder, f32_softmax, xb::DType::F32, false)->Unit(benchmark::kMillisecond)->UseRealTime();
BENCHMARK_CAPTURE(BM_LlamaDecoderSched, blas_cpu, "BLAS")->Unit(benchmark::kMillisecond)->UseRealTime();

}  // namespace
}  // namespace bench
