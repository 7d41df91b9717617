// graph-bench: Google Benchmark microbenchmarks of xbackend's CPU kernels and graphs, each next to
// a reference measured in the same run (OpenBLAS sgemm for mul_mat, memcpy for memory-bound ops),
// so the figures can be quoted as ratios.
//
//   build/apps/graph-bench --benchmark_filter=MulMat --benchmark_out=results/x.json --benchmark_out_format=json
#include <benchmark/benchmark.h>
#include <cblas.h>

#include <cstring>
#include <random>
#include <vector>

#include "alloc/context_alloc.hpp"
#include "backend/registry.hpp"
#include "backend/tensor_io.hpp"
#include "config/llama_decoder.hpp"
#include "core/ops.hpp"

namespace {

std::unique_ptr<xb::Backend> cpu_backend() {
    auto b = xb::Registry::global().init_by_name("CPU");
    if (!b.is_ok()) std::abort();
    return std::move(b).value();
}

void fill_random(xb::Tensor& t, std::mt19937& rng, float lo, float hi) {
    std::uniform_real_distribution<float> dist(lo, hi);
    std::vector<float> v(static_cast<size_t>(t.nelements()));
    for (float& x : v) x = dist(rng);
    if (!xb::tensor_set_f32(t, v).is_ok()) std::abort();
}

// A graph of one op, allocated and filled, ready to compute repeatedly.
struct OneOpGraph {
    xb::Context ctx;
    xb::Graph graph;
    std::unique_ptr<xb::Buffer> buffer;
};

void run_graph(benchmark::State& state, xb::Backend& backend, const xb::Graph& graph, double flops) {
    for (auto _ : state) {
        if (!backend.graph_compute(graph).is_ok()) state.SkipWithError("graph_compute failed");
    }
    if (flops > 0) state.counters["GFLOPS"] = benchmark::Counter(flops * 1e-9, benchmark::Counter::kIsIterationInvariantRate);
}

// mul_mat of a [K, M] (type) by b [K, N] f32 on the CPU backend.
void BM_MulMat(benchmark::State& state, xb::DType weight_type) {
    const int64_t m = state.range(0), n = state.range(1), k = state.range(2);
    auto backend = cpu_backend();
    OneOpGraph g;
    xb::Tensor* a = g.ctx.new_tensor(weight_type, {k, m});
    xb::Tensor* b = g.ctx.new_tensor(xb::DType::F32, {k, n});
    xb::Tensor* c = xb::mul_mat(g.ctx, a, b);
    auto graph = xb::Graph::build({c});
    auto buffer = xb::alloc_ctx_tensors(g.ctx, *backend);
    if (!graph.is_ok() || !buffer.is_ok()) return state.SkipWithError("setup failed");
    std::mt19937 rng(1);
    fill_random(*a, rng, -1, 1);
    fill_random(*b, rng, -1, 1);
    run_graph(state, *backend, *graph, 2.0 * m * n * k);
}

// The same product with OpenBLAS: C[n, m] = B[n, k] * A[m, k]^T, row-major.
void BM_MulMatOpenBLAS(benchmark::State& state) {
    const int m = static_cast<int>(state.range(0)), n = static_cast<int>(state.range(1)), k = static_cast<int>(state.range(2));
    std::mt19937 rng(1);
    std::uniform_real_distribution<float> dist(-1, 1);
    std::vector<float> a(static_cast<size_t>(m) * k), b(static_cast<size_t>(n) * k), c(static_cast<size_t>(m) * n);
    for (float& x : a) x = dist(rng);
    for (float& x : b) x = dist(rng);
    for (auto _ : state) {
        cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasTrans, n, m, k, 1.0f, b.data(), k, a.data(), k, 0.0f, c.data(), m);
        benchmark::DoNotOptimize(c.data());
    }
    state.counters["GFLOPS"] = benchmark::Counter(2.0 * m * n * k * 1e-9, benchmark::Counter::kIsIterationInvariantRate);
}

// Memory bandwidth reference: memcpy of the bytes an f32 add reads and writes.
void BM_Memcpy(benchmark::State& state) {
    const size_t n = static_cast<size_t>(state.range(0));
    std::vector<float> src(n, 1.0f), dst(n);
    for (auto _ : state) {
        std::memcpy(dst.data(), src.data(), n * sizeof(float));
        benchmark::DoNotOptimize(dst.data());
    }
    state.SetBytesProcessed(static_cast<int64_t>(state.iterations() * 2 * n * sizeof(float)));
}

// An f32 element-wise add (reads 2n, writes n floats).
void BM_Add(benchmark::State& state) {
    const int64_t n = state.range(0);
    auto backend = cpu_backend();
    OneOpGraph g;
    xb::Tensor* a = g.ctx.new_tensor(xb::DType::F32, {n});
    xb::Tensor* b = g.ctx.new_tensor(xb::DType::F32, {n});
    auto graph = xb::Graph::build({xb::add(g.ctx, a, b)});
    auto buffer = xb::alloc_ctx_tensors(g.ctx, *backend);
    if (!graph.is_ok() || !buffer.is_ok()) return state.SkipWithError("setup failed");
    std::mt19937 rng(2);
    fill_random(*a, rng, -1, 1);
    fill_random(*b, rng, -1, 1);
    run_graph(state, *backend, *graph, 0);
    state.SetBytesProcessed(static_cast<int64_t>(state.iterations() * 3 * n * sizeof(float)));
}

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
    auto graph = xb::Graph::build({model->logits});
    auto buffer = xb::alloc_ctx_tensors(ctx, *backend);
    if (!graph.is_ok() || !buffer.is_ok()) return state.SkipWithError("setup failed");
    std::mt19937 rng(3);
    for (xb::Tensor* w : model->weights()) fill_random(*w, rng, -0.05f, 0.05f);
    std::vector<int32_t> tokens(static_cast<size_t>(p.n_tokens)), positions(tokens.size());
    for (size_t i = 0; i < tokens.size(); ++i) {
        tokens[i] = static_cast<int32_t>((i * 7919) % static_cast<size_t>(p.n_vocab));
        positions[i] = static_cast<int32_t>(i);
    }
    if (!xb::tensor_set(*model->tokens, tokens.data(), 0, model->tokens->nbytes()).is_ok() ||
        !xb::tensor_set(*model->positions, positions.data(), 0, model->positions->nbytes()).is_ok() ||
        !xb::tensor_set_f32(*model->kq_mask, xb::causal_mask_values(p.n_tokens, p.n_tokens)).is_ok()) {
        return state.SkipWithError("input setup failed");
    }
    run_graph(state, *backend, *graph, p.matmul_flops());
    state.counters["nodes"] = graph->n_nodes();
}

// Decoder shapes: attention/FFN projections and the output matrix, at 32 tokens and 1 token.
void MulMatShapes(benchmark::internal::Benchmark* b) {
    for (int64_t n : {32, 1}) {
        b->Args({1024, n, 1024})->Args({2816, n, 1024})->Args({1024, n, 2816})->Args({32000, n, 1024});
    }
    b->ArgNames({"M", "N", "K"})->Unit(benchmark::kMillisecond)->UseRealTime();
}

BENCHMARK_CAPTURE(BM_MulMat, f32, xb::DType::F32)->Apply(MulMatShapes);
BENCHMARK_CAPTURE(BM_MulMat, f16, xb::DType::F16)->Apply(MulMatShapes);
BENCHMARK(BM_MulMatOpenBLAS)->Apply(MulMatShapes);
BENCHMARK(BM_Memcpy)->Arg(1 << 24)->Unit(benchmark::kMillisecond)->UseRealTime();
BENCHMARK(BM_Add)->Arg(1 << 24)->Unit(benchmark::kMillisecond)->UseRealTime();
BENCHMARK_CAPTURE(BM_LlamaDecoder, f32_flash, xb::DType::F32, true)->Unit(benchmark::kMillisecond)->UseRealTime();
BENCHMARK_CAPTURE(BM_LlamaDecoder, f16_flash, xb::DType::F16, true)->Unit(benchmark::kMillisecond)->UseRealTime();
BENCHMARK_CAPTURE(BM_LlamaDecoder, f32_softmax, xb::DType::F32, false)->Unit(benchmark::kMillisecond)->UseRealTime();

}  // namespace

BENCHMARK_MAIN();
