// Kernel benchmarks of the CPU backend, each next to a reference measured in the same run:
// OpenBLAS sgemm for mul_mat, memcpy for memory-bound ops.
#include <benchmark/benchmark.h>
#include <cblas.h>

#include <cstring>
#include <vector>

#include "alloc/context_alloc.hpp"
#include "bench_util.hpp"
#include "core/ops.hpp"

namespace bench {
namespace {

using xb::Graph;


// mul_mat of a [K, M] (type) by b [K, N] f32 on the CPU backend.
void BM_MulMat(benchmark::State& state, xb::DType weight_type) {
    const int64_t m = state.range(0), n = state.range(1), k = state.range(2);
    auto backend = cpu_backend();
    xb::Context ctx;
    xb::Tensor* a = ctx.new_tensor(weight_type, {k, m});
    xb::Tensor* b = ctx.new_tensor(xb::DType::F32, {k, n});
    xb::Tensor* c = xb::mul_mat(ctx, a, b);
    auto graph = xb::Graph::build({c});
    auto buffer = xb::alloc_ctx_tensors(ctx, *backend);
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
    xb::Context ctx;
    xb::Tensor* a = ctx.new_tensor(xb::DType::F32, {n});
    xb::Tensor* b = ctx.new_tensor(xb::DType::F32, {n});
    auto graph = xb::Graph::build({xb::add(ctx, a, b)});
    auto buffer = xb::alloc_ctx_tensors(ctx, *backend);
    if (!graph.is_ok() || !buffer.is_ok()) return state.SkipWithError("setup failed");
    std::mt19937 rng(2);
    fill_random(*a, rng, -1, 1);
    fill_random(*b, rng, -1, 1);
    run_graph(state, *backend, *graph, 0);
    state.SetBytesProcessed(static_cast<int64_t>(state.iterations() * 3 * n * sizeof(float)));
}

// Decoder shapes: attention/FFN projections and the output matrix, at 32 tokens and 1 token.
void MulMatShapes(benchmark::internal::Benchmark* b) {
    for (int64_t n : {32, 1}) {
        b->Args({1024, n, 1024})->Args({2816, n, 1024})->Args({1024, n, 2816})->Args({32000, n, 1024});
    }
    b->ArgNames({"M", "N", "K"})->Unit(benchmark::kMillisecond)->UseRealTime();
}

// A 4096-square weight over batch sizes: where the dot-product tiles hand over to the packed
// outer-product kernel (kernels_matmul_packed.cpp), against OpenBLAS at each size.
void MulMatBatchSweep(benchmark::internal::Benchmark* b) {
    for (int64_t n : {8, 16, 24, 32, 48, 64, 128, 512}) b->Args({4096, n, 4096});
    b->ArgNames({"M", "N", "K"})->Unit(benchmark::kMillisecond)->UseRealTime();
}

BENCHMARK_CAPTURE(BM_MulMat, f32, xb::DType::F32)->Apply(MulMatShapes);
BENCHMARK_CAPTURE(BM_MulMat, f16, xb::DType::F16)->Apply(MulMatShapes);
BENCHMARK(BM_MulMatOpenBLAS)->Apply(MulMatShapes);
BENCHMARK_CAPTURE(BM_MulMat, f32_sweep, xb::DType::F32)->Apply(MulMatBatchSweep);
BENCHMARK_CAPTURE(BM_MulMat, f16_sweep, xb::DType::F16)->Apply(MulMatBatchSweep);
BENCHMARK(BM_MulMatOpenBLAS)->Name("BM_MulMatOpenBLAS/sweep")->Apply(MulMatBatchSweep);
// 64 MiB, and 1 GiB (beyond any last-level cache: the streaming benchmarks' reference).
BENCHMARK(BM_Memcpy)->Arg(1 << 24)->Arg(1 << 28)->Unit(benchmark::kMillisecond)->UseRealTime();
BENCHMARK(BM_Add)->Arg(1 << 24)->Unit(benchmark::kMillisecond)->UseRealTime();


}  // namespace
}  // namespace bench
