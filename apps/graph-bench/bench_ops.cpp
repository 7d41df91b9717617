// Memory-bound kernels of the CPU backend per op and type, in bytes moved per second (the bytes
// of every source and of the result), to read against BM_Memcpy in the same run. Shapes are
// the decoder's activations: 32 tokens of width 4096, or rows of a 32000 x 1024 table.
#include <benchmark/benchmark.h>

#include <functional>
#include <vector>

#include "alloc/context_alloc.hpp"
#include "backend/tensor_io.hpp"
#include "bench_util.hpp"
#include "core/ops.hpp"

namespace bench {
namespace {

using xb::Context;
using xb::DType;
using xb::Tensor;

constexpr int64_t kWidth = 4096;
constexpr int64_t kTokens = 32;

// Builds the op's node; the leafs it creates are filled with values in [-1, 1] except i32 ones,
// which the builder fills itself after allocation (through `fill_after`).
using OpBuilder = std::function<Tensor*(Context&, DType, std::vector<std::function<void()>>& fill_after)>;

Tensor* positions(Context& ctx, int64_t n, std::vector<std::function<void()>>& fill_after) {
    Tensor* p = ctx.new_tensor(DType::I32, {n});
    fill_after.push_back([p, n] {
        std::vector<int32_t> v(static_cast<size_t>(n));
        for (int64_t i = 0; i < n; ++i) v[static_cast<size_t>(i)] = static_cast<int32_t>((i * 7919) % 32000);
        (void)xb::tensor_set(*p, v.data(), 0, v.size() * sizeof(int32_t));
    });
    return p;
}

void BM_Op(benchmark::State& state, const OpBuilder& build, DType type) {
    auto backend = cpu_backend();
    Context ctx;
    std::vector<std::function<void()>> fill_after;
    Tensor* node = build(ctx, type, fill_after);
    auto graph = xb::Graph::build({node});
    auto buffer = xb::alloc_ctx_tensors(ctx, *backend);
    if (!graph.is_ok() || !buffer.is_ok()) return state.SkipWithError("setup failed");
    std::mt19937 rng(3);
    for (Tensor* leaf : graph->leafs()) {
        if (leaf->type != DType::I32) fill_random(*leaf, rng, -1, 1);
    }
    for (auto& fill : fill_after) fill();
    run_graph(state, *backend, *graph, 0);
    state.SetBytesProcessed(static_cast<int64_t>(state.iterations() * bytes_moved(*node)));
}

Tensor* activations(Context& ctx, DType type) { return ctx.new_tensor(type, {kWidth, kTokens}); }

const OpBuilder kMulRow = [](Context& ctx, DType t, auto&) {
    return xb::mul(ctx, activations(ctx, t), ctx.new_tensor(t, {kWidth}));  // broadcast row
};
const OpBuilder kRmsNorm = [](Context& ctx, DType t, auto&) { return xb::rms_norm(ctx, activations(ctx, t), 1e-5f); };
const OpBuilder kSoftMax = [](Context& ctx, DType t, auto&) { return xb::soft_max(ctx, activations(ctx, t)); };
const OpBuilder kSilu = [](Context& ctx, DType t, auto&) { return xb::silu(ctx, activations(ctx, t)); };
const OpBuilder kCastF16 = [](Context& ctx, DType t, auto&) { return xb::cast(ctx, activations(ctx, t), DType::F16); };
const OpBuilder kGetRows = [](Context& ctx, DType t, auto& fill_after) {
    return xb::get_rows(ctx, ctx.new_tensor(t, {1024, 32000}), positions(ctx, kTokens, fill_after));
};
const OpBuilder kRope = [](Context& ctx, DType t, auto& fill_after) {
    xb::RopeParams p;
    p.n_dims = 128;
    return xb::rope(ctx, ctx.new_tensor(t, {128, 32, kTokens}), positions(ctx, kTokens, fill_after), p);
};

void OpArgs(benchmark::internal::Benchmark* b) { b->Unit(benchmark::kMicrosecond)->UseRealTime(); }

BENCHMARK_CAPTURE(BM_Op, mul_row/f32, kMulRow, DType::F32)->Apply(OpArgs);
BENCHMARK_CAPTURE(BM_Op, mul_row/f16, kMulRow, DType::F16)->Apply(OpArgs);
BENCHMARK_CAPTURE(BM_Op, rms_norm/f32, kRmsNorm, DType::F32)->Apply(OpArgs);
BENCHMARK_CAPTURE(BM_Op, soft_max/f32, kSoftMax, DType::F32)->Apply(OpArgs);
BENCHMARK_CAPTURE(BM_Op, silu/f32, kSilu, DType::F32)->Apply(OpArgs);
BENCHMARK_CAPTURE(BM_Op, silu/f16, kSilu, DType::F16)->Apply(OpArgs);
BENCHMARK_CAPTURE(BM_Op, cast_to_f16/f32, kCastF16, DType::F32)->Apply(OpArgs);
BENCHMARK_CAPTURE(BM_Op, cast_to_f16/bf16, kCastF16, DType::BF16)->Apply(OpArgs);
BENCHMARK_CAPTURE(BM_Op, get_rows/f32, kGetRows, DType::F32)->Apply(OpArgs);
BENCHMARK_CAPTURE(BM_Op, get_rows/f16, kGetRows, DType::F16)->Apply(OpArgs);
BENCHMARK_CAPTURE(BM_Op, rope/f32, kRope, DType::F32)->Apply(OpArgs);
BENCHMARK_CAPTURE(BM_Op, rope/f16, kRope, DType::F16)->Apply(OpArgs);

}  // namespace
}  // namespace bench
