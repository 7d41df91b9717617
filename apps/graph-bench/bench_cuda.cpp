// GPU benchmarks next to their references, measured in the same run:
//   BM_CudaMemcpyD2D     cudaMemcpy device-to-device: the bandwidth the memory-bound kernels are read
//                        against (bytes read + written per second, as the kernels count them);
//   BM_CudaOp/<op>       xbackend's kernels on CUDA0 on 64M-element tensors, bytes moved per second;
//   BM_CudaMulMat/<type> xbackend's mul_mat on CUDA0 (including its conversion of f32 activations to
//                        the f16 weights' type), and BM_CublasGemm/<type> the same product called on
//                        cuBLAS directly with operands already in the GEMM's types. Like for like: the
//                        same values (the same generator, seed and order, converted to f16 by the same
//                        function as xbackend's tensor_set), a stream and a cuBLAS handle made as the
//                        backend makes its own (non-blocking stream, default math), one untimed warm-up,
//                        and per iteration the work then a synchronisation of that stream, as
//                        Backend::graph_compute does.
// scripts/bench-report gpu turns a run into the ratios recorded in results/. Every benchmark is
// skipped with a message when no CUDA0 is registered; none is built without CUDA.
#if defined(XB_HAVE_CUDA)

#include <benchmark/benchmark.h>
#include <cublas_v2.h>
#include <cuda_runtime.h>

#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "alloc/context_alloc.hpp"
#include "backend/registry.hpp"
#include "bench_util.hpp"
#include "builtin/builtin_backends.hpp"
#include "core/dtype.hpp"
#include "core/ops.hpp"
#include "cuda/cublas_library.hpp"
#include "cuda/cuda_handles.hpp"

namespace bench {
namespace {

using xb::Context;
using xb::DType;
using xb::Tensor;

constexpr int64_t kRow = 4096;
constexpr int64_t kRows = 16384;  // 64M elements: large enough that launch costs vanish

std::unique_ptr<xb::Backend> cuda_backend() {
    auto b = xb::global_registry().init_by_name("CUDA0");
    if (!b.is_ok()) return nullptr;
    return std::move(b).value();
}

void BM_CudaMemcpyD2D(benchmark::State& state) {
    const size_t bytes = static_cast<size_t>(kRow * kRows) * sizeof(float);
    auto src = xb::cuda::DeviceMemory::allocate(0, bytes);
    auto dst = xb::cuda::DeviceMemory::allocate(0, bytes);
    if (!src.is_ok() || !dst.is_ok()) return state.SkipWithError("no GPU memory (no CUDA device?)");
    static_cast<void>(cudaMemset(src->get(), 1, bytes));
    for (auto _ : state) {
        if (cudaMemcpy(dst->get(), src->get(), bytes, cudaMemcpyDeviceToDevice) != cudaSuccess) {
            return state.SkipWithError("cudaMemcpy failed");
        }
    }
    state.SetBytesProcessed(static_cast<int64_t>(state.iterations() * 2 * bytes));
}

// The timing every GPU benchmark here shares: `once` (the work and a synchronisation of its stream;
// false on failure) called one time untimed (lazy module loading, cuBLAS heuristics and workspace),
// then once per iteration.
void time_synchronised(benchmark::State& state, const std::function<bool()>& once) {
    if (!once()) return state.SkipWithError("the warm-up run failed");
    for (auto _ : state) {
        if (!once()) {
            state.SkipWithError("a timed run failed");
            break;
        }
    }
}

// xbackend's compute of `graph`: Backend::graph_compute queues it and synchronises the stream.
void time_graph(benchmark::State& state, xb::Backend& backend, const xb::Graph& graph) {
    time_synchronised(state, [&] { return backend.graph_compute(graph).is_ok(); });
}

using OpBuilder = std::function<Tensor*(Context&, DType)>;

void BM_CudaOp(benchmark::State& state, const OpBuilder& build, DType type) {
    auto backend = cuda_backend();
    if (backend == nullptr) return state.SkipWithError("no CUDA0 device");
    Context ctx;
    Tensor* node = build(ctx, type);
    auto graph = xb::Graph::build({node});
    auto buffer = xb::alloc_ctx_tensors(ctx, *backend);
    if (!graph.is_ok() || !buffer.is_ok()) return state.SkipWithError("setup failed");
    std::mt19937 rng(3);
    for (Tensor* leaf : graph->leafs()) fill_random(*leaf, rng, -1, 1);
    time_graph(state, *backend, *graph);
    state.SetBytesProcessed(static_cast<int64_t>(state.iterations() * bytes_moved(*node)));
}

Tensor* big(Context& ctx, DType type) { return ctx.new_tensor(type, {kRow, kRows}); }

const OpBuilder kAdd = [](Context& ctx, DType t) { return xb::add(ctx, big(ctx, t), big(ctx, t)); };
const OpBuilder kMulRow = [](Context& ctx, DType t) { return xb::mul(ctx, big(ctx, t), ctx.new_tensor(t, {kRow})); };
const OpBuilder kScale = [](Context& ctx, DType t) { return xb::scale(ctx, big(ctx, t), 0.5f); };
const OpBuilder kSilu = [](Context& ctx, DType t) { return xb::silu(ctx, big(ctx, t)); };
const OpBuilder kCastF16 = [](Context& ctx, DType t) { return xb::cast(ctx, big(ctx, t), DType::F16); };
const OpBuilder kCont = [](Context& ctx, DType t) { return xb::cont(ctx, xb::transpose(ctx, big(ctx, t))); };
const OpBuilder kRmsNorm = [](Context& ctx, DType t) { return xb::rms_norm(ctx, big(ctx, t), 1e-5f); };
const OpBuilder kSoftMax = [](Context& ctx, DType t) { return xb::soft_max(ctx, big(ctx, t)); };

void OpArgs(benchmark::internal::Benchmark* b) { b->Unit(benchmark::kMicrosecond)->UseRealTime(); }

BENCHMARK(BM_CudaMemcpyD2D)->Unit(benchmark::kMicrosecond)->UseRealTime();
BENCHMARK_CAPTURE(BM_CudaOp, add/f32, kAdd, DType::F32)->Apply(OpArgs);
BENCHMARK_CAPTURE(BM_CudaOp, add/f16, kAdd, DType::F16)->Apply(OpArgs);
BENCHMARK_CAPTURE(BM_CudaOp, mul_row/f32, kMulRow, DType::F32)->Apply(OpArgs);
BENCHMARK_CAPTURE(BM_CudaOp, scale/f32, kScale, DType::F32)->Apply(OpArgs);
BENCHMARK_CAPTURE(BM_CudaOp, silu/f32, kSilu, DType::F32)->Apply(OpArgs);
BENCHMARK_CAPTURE(BM_CudaOp, silu/bf16, kSilu, DType::BF16)->Apply(OpArgs);
BENCHMARK_CAPTURE(BM_CudaOp, cast_to_f16/f32, kCastF16, DType::F32)->Apply(OpArgs);
BENCHMARK_CAPTURE(BM_CudaOp, cont_transposed/f32, kCont, DType::F32)->Apply(OpArgs);
BENCHMARK_CAPTURE(BM_CudaOp, rms_norm/f32, kRmsNorm, DType::F32)->Apply(OpArgs);
BENCHMARK_CAPTURE(BM_CudaOp, soft_max/f32, kSoftMax, DType::F32)->Apply(OpArgs);

// Decoder projections at batch 1 (memory-bound) to 512 (compute-bound): M x K weights, N columns.
void GemmShapes(benchmark::internal::Benchmark* b) {
    for (int64_t n : {1, 32, 512}) b->Args({4096, n, 4096})->Args({11008, n, 4096});
    b->ArgNames({"M", "N", "K"})->Unit(benchmark::kMicrosecond)->UseRealTime();
}

double gemm_flops(const benchmark::State& state) {
    return 2.0 * static_cast<double>(state.range(0)) * static_cast<double>(state.range(1)) *
           static_cast<double>(state.range(2));
}

void count_gemm_flops(benchmark::State& state) {
    state.counters["GFLOPS"] = benchmark::Counter(gemm_flops(state) * 1e-9, benchmark::Counter::kIsIterationInvariantRate);
}

// The inputs of the product M x N x K: the weights (K x M) then the activations (K x N), uniform in
// [-1, 1) from mt19937(kGemmSeed) in that order, for xbackend (fill_random) and cuBLAS alike.
constexpr uint32_t kGemmSeed = 4;

void BM_CudaMulMat(benchmark::State& state, DType weights) {
    auto backend = cuda_backend();
    if (backend == nullptr) return state.SkipWithError("no CUDA0 device");
    Context ctx;
    Tensor* a = ctx.new_tensor(weights, {state.range(2), state.range(0)});
    Tensor* b = ctx.new_tensor(DType::F32, {state.range(2), state.range(1)});
    auto graph = xb::Graph::build({xb::mul_mat(ctx, a, b)});
    auto buffer = xb::alloc_ctx_tensors(ctx, *backend);
    if (!graph.is_ok() || !buffer.is_ok()) return state.SkipWithError("setup failed");
    std::mt19937 rng(kGemmSeed);
    fill_random(*a, rng, -1, 1);
    fill_random(*b, rng, -1, 1);
    time_graph(state, *backend, *graph);
    count_gemm_flops(state);
}

// `values` on CUDA device 0 (CUDA0) as f32 or, for F16, as the f16 bits xbackend's tensor_set stores.
xb::Result<xb::cuda::DeviceMemory> upload(const std::vector<float>& values, DType type) {
    std::vector<uint16_t> halves;
    const void* src = values.data();
    size_t bytes = values.size() * sizeof(float);
    if (type == DType::F16) {
        halves.reserve(values.size());
        for (const float v : values) halves.push_back(xb::f32_to_f16(v));
        src = halves.data();
        bytes = halves.size() * sizeof(uint16_t);
    }
    XB_ASSIGN_OR_RETURN(xb::cuda::DeviceMemory memory, xb::cuda::DeviceMemory::allocate(0, bytes));
    if (cudaMemcpy(memory.get(), src, bytes, cudaMemcpyHostToDevice) != cudaSuccess) {
        return xb::Status(xb::StatusCode::Internal, "cudaMemcpy to the device failed");
    }
    return memory;
}

// The same product on cuBLAS alone: C[M x N] = A^T B with A stored K x M, as xbackend's plan calls it,
// f32 in and out (TF32 off, as xbackend's default) or f16 in, f32 out; the same input values as
// BM_CudaMulMat (the activations rounded to f16 for the f16 product, as xbackend's conversion does).
void BM_CublasGemm(benchmark::State& state, DType weights) {
    if (cuda_backend() == nullptr) return state.SkipWithError("no CUDA0 device");
    const int m = static_cast<int>(state.range(0)), n = static_cast<int>(state.range(1));
    const int k = static_cast<int>(state.range(2));
    std::mt19937 rng(kGemmSeed);
    const std::vector<float> a_values = uniform_values(rng, int64_t{k} * m, -1, 1);
    const std::vector<float> b_values = uniform_values(rng, int64_t{k} * n, -1, 1);
    auto a = upload(a_values, weights);
    auto b = upload(b_values, weights);
    auto c = xb::cuda::DeviceMemory::allocate(0, static_cast<size_t>(m) * n * sizeof(float));
    if (!a.is_ok() || !b.is_ok() || !c.is_ok()) return state.SkipWithError("no GPU memory for the operands");
    auto stream = xb::cuda::create_stream(0);
    if (!stream.is_ok()) return state.SkipWithError("cannot create a stream");
    auto handle = xb::cuda::create_cublas(0, stream->get());
    if (!handle.is_ok()) return state.SkipWithError("cannot create a cuBLAS handle");
    const cudaDataType type = weights == DType::F16 ? CUDA_R_16F : CUDA_R_32F;
    const float alpha = 1.0f, beta = 0.0f;
    time_synchronised(state, [&] {
        return xb::cuda::cublas().gemm_ex(handle->get(), CUBLAS_OP_T, CUBLAS_OP_N, m, n, k, &alpha, a->get(), type, k,
                                          b->get(), type, k, &beta, c->get(), CUDA_R_32F, m, CUBLAS_COMPUTE_32F,
                                          CUBLAS_GEMM_DEFAULT) == CUBLAS_STATUS_SUCCESS &&
               cudaStreamSynchronize(stream->get()) == cudaSuccess;
    });
    count_gemm_flops(state);
}

BENCHMARK_CAPTURE(BM_CudaMulMat, f32, DType::F32)->Apply(GemmShapes);
BENCHMARK_CAPTURE(BM_CublasGemm, f32, DType::F32)->Apply(GemmShapes);
BENCHMARK_CAPTURE(BM_CudaMulMat, f16, DType::F16)->Apply(GemmShapes);
BENCHMARK_CAPTURE(BM_CublasGemm, f16, DType::F16)->Apply(GemmShapes);

}  // namespace
}  // namespace bench

#endif  // XB_HAVE_CUDA
