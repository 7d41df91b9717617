// Quantized weights on the CPU backend, each figure next to its reference in the same run:
//   BM_QuantMatVecStream  one-token products streaming the weights from memory (several weight
//                         matrices, together well beyond the last-level cache), as weight bytes per
//                         second, to read against BM_Memcpy's bandwidth;
//   BM_QuantMatVecVsMemcpy the same, each product followed by a memcpy of the same bytes: their
//                         time ratio per iteration (x_memcpy), immune to the machine's drift;
//   BM_QuantMatVecHugePages the same products over a second copy of the weights in small pages
//                         (the CPU's huge_pages=off), the two computed alternately: their time
//                         ratio (x_small_pages, below 1 where huge pages are faster);
//   BM_QuantDotInCache    one thread's row dots (this CPU's quant_dot table) over 192 rows of 4096
//                         weights, about half a MiB, in the L2 cache: the kernels' own speed, no
//                         memory and no threads; the best pass of the run (best_us), which a shared
//                         VM's noise moves far less than a mean;
//   BM_QuantMulMat        4096 x 4096 products at batch 1, 32 and 512 in GFLOP/s, to read against
//                         ggml's test-backend-ops perf figures for the same type and shape, and
//                         the f32 product here;
//   BM_QuantDecode        the 4-layer decoder of configs/llama-decoder.json generating one token
//                         with a 256-position cache, at each weight type (f32 the reference).
#include <benchmark/benchmark.h>

#include <algorithm>
#include <chrono>
#include <cstring>
#include <memory>
#include <new>
#include <vector>

#include "alloc/context_alloc.hpp"
#include "backend/huge_pages.hpp"
#include "backend/host_buffer.hpp"
#include "backend/registry.hpp"
#include "backend/tensor_io.hpp"
#include "bench_util.hpp"
#include "builtin/builtin_backends.hpp"
#include "models/decoder.hpp"
#include "core/ops.hpp"
#include "core/quant.hpp"
#include "cpu_kernels/quant_dot.hpp"

namespace bench {
namespace {

using xb::DType;

constexpr DType kWeightTypes[] = {
    DType::F32,    DType::F16,     DType::BF16,   DType::Q4_0,  DType::Q4_1,    DType::Q5_0,   DType::Q5_1,
    DType::Q8_0,   DType::Q4_K,    DType::Q5_K,   DType::Q6_K,  DType::Q2_K,    DType::Q3_K,   DType::IQ2_XXS,
    DType::IQ2_XS, DType::IQ2_S,   DType::IQ3_XXS, DType::IQ3_S, DType::IQ1_S,  DType::IQ1_M,  DType::IQ4_NL,
    DType::IQ4_XS, DType::TQ1_0,   DType::TQ2_0,  DType::MXFP4, DType::NVFP4};

// Several [k, m] weights times one column each: enough matrices that together they are at least
// kStreamBytes, so that each iteration reads them from memory, not from the cache (1 GiB: some
// servers' last-level caches hold 256 MiB or more).
constexpr size_t kStreamBytes = size_t{1} << 30;

// The streaming products' graph, allocated and filled.
struct StreamSetup {
    std::unique_ptr<xb::Backend> backend;
    xb::Context ctx;
    std::vector<xb::Tensor*> weights;
    xb::Graph graph;
    std::unique_ptr<xb::MultiBuffer> buffer;
    size_t weight_bytes = 0;  // of all the matrices
    double flops = 0;
};

// Null (and the benchmark skipped with the reason) when it cannot be set up.
std::unique_ptr<StreamSetup> stream_setup(benchmark::State& state, DType type) {
    const int64_t m = state.range(0), k = state.range(1);
    const size_t matrix_bytes = xb::row_size(type, k) * static_cast<size_t>(m);
    const int64_t copies = std::max<int64_t>(2, static_cast<int64_t>((kStreamBytes + matrix_bytes - 1) / matrix_bytes));
    auto s = std::make_unique<StreamSetup>();
    s->backend = cpu_backend();
    xb::Tensor* x = s->ctx.new_tensor(DType::F32, {k, 1});
    std::vector<xb::Tensor*> outputs;
    for (int64_t i = 0; i < copies; ++i) {
        s->weights.push_back(s->ctx.new_tensor(type, {k, m}));
        outputs.push_back(xb::mul_mat(s->ctx, s->weights.back(), x));
    }
    auto graph = xb::Graph::build(outputs);
    auto buffer = xb::alloc_ctx_tensors(s->ctx, *s->backend);
    if (!graph.is_ok() || !buffer.is_ok()) {
        state.SkipWithError("setup failed");
        return nullptr;
    }
    s->graph = std::move(*graph);
    s->buffer = std::move(*buffer);
    // One matrix quantized from random values, its bytes copied into the others: quantizing
    // 256 MiB of k-quants would take longer than the benchmark.
    std::mt19937 rng(1);
    fill_random(*s->weights[0], rng, -1, 1);
    std::vector<std::byte> bytes(matrix_bytes);
    bool ok = xb::tensor_get(*s->weights[0], bytes.data(), 0, bytes.size()).is_ok();
    for (xb::Tensor* w : s->weights) ok = ok && xb::tensor_set(*w, bytes.data(), 0, bytes.size()).is_ok();
    if (!ok) {
        state.SkipWithError("setup failed");
        return nullptr;
    }
    fill_random(*x, rng, -1, 1);
    s->weight_bytes = matrix_bytes * static_cast<size_t>(copies);
    s->flops = 2.0 * static_cast<double>(m * k * copies);
    state.counters["matrices"] = static_cast<double>(copies);
    return s;
}

void BM_QuantMatVecStream(benchmark::State& state, DType type) {
    auto s = stream_setup(state, type);
    if (s == nullptr) return;
    run_graph(state, *s->backend, s->graph, s->flops);
    state.SetBytesProcessed(static_cast<int64_t>(state.iterations()) * static_cast<int64_t>(s->weight_bytes));
}

// Runs `measured` and then `reference` in every iteration, back to back, so that a machine's drift
// falls on both alike: the iteration's time is measured's, and the counters `name` and `name`_best
// are the median and smallest of time(measured) / time(reference). False, the benchmark skipped,
// if either fails.
template <class Measured, class Reference>
bool time_against(benchmark::State& state, Measured measured, Reference reference, const std::string& name) {
    std::vector<double> ratios;
    for (auto _ : state) {
        const auto t0 = std::chrono::steady_clock::now();
        const bool measured_ok = measured();
        const auto t1 = std::chrono::steady_clock::now();
        if (!measured_ok || !reference()) {
            state.SkipWithError("compute failed");
            return false;
        }
        const auto t2 = std::chrono::steady_clock::now();
        const double seconds = std::chrono::duration<double>(t1 - t0).count();
        ratios.push_back(seconds / std::chrono::duration<double>(t2 - t1).count());
        state.SetIterationTime(seconds);
    }
    if (ratios.empty()) return true;
    std::sort(ratios.begin(), ratios.end());
    state.counters[name] = ratios[ratios.size() / 2];
    state.counters[name + "_best"] = ratios.front();
    return true;
}

// The same products, each iteration followed by a memcpy of the same weight bytes, and the ratio
// of the two times taken per iteration. On a machine whose speed drifts (a shared VM), a product
// and a memcpy timed seconds apart can disagree by more than the margin being judged; back to back
// they see the same machine. Counters: x_memcpy (median ratio), x_memcpy_best (smallest).
void BM_QuantMatVecVsMemcpy(benchmark::State& state, DType type) {
    auto s = stream_setup(state, type);
    if (s == nullptr) return;
    // One memcpy call of that many bytes, as BM_Memcpy (a C library switches to streaming stores
    // only for large copies, so copying matrix by matrix would be slower than the reference).
    // In the pages the CPU's buffers get (backend/huge_pages.hpp), so the two differ by the work only.
    const xb::AlignedBytes source = xb::allocate_host_bytes(s->weight_bytes, xb::kHostAlignment, true);
    const xb::AlignedBytes copy = xb::allocate_host_bytes(s->weight_bytes, xb::kHostAlignment, true);
    if (source.data() == nullptr || copy.data() == nullptr) {
        return state.SkipWithError("cannot allocate the memcpy buffers (twice the weights)");
    }
    std::memset(source.data(), 1, s->weight_bytes);  // touched, as the weights are
    std::memset(copy.data(), 0, s->weight_bytes);
    const bool ok = time_against(
        state, [&] { return s->backend->graph_compute(s->graph).is_ok(); },
        [&] {
            std::memcpy(copy.data(), source.data(), s->weight_bytes);
            benchmark::DoNotOptimize(copy.data());
            return true;
        },
        "x_memcpy");
    if (!ok) return;
    state.SetBytesProcessed(static_cast<int64_t>(state.iterations()) * static_cast<int64_t>(s->weight_bytes));
}

// The streaming products over weights in huge pages against the same over weights in small pages,
// computed alternately (each iteration one of each), so the machine's drift falls on both alike.
void BM_QuantMatVecHugePages(benchmark::State& state, DType type) {
    xb::Device* cpu = xb::global_registry().dev_by_name("CPU");
    if (cpu == nullptr) return state.SkipWithError("no CPU device");
    auto huge = stream_setup(state, type);
    if (huge == nullptr) return;
    if (!cpu->configure("huge_pages=off").is_ok()) return state.SkipWithError("CPU: no huge_pages setting");
    auto small = stream_setup(state, type);
    (void)cpu->configure("huge_pages=on");  // accepted a moment ago
    if (small == nullptr) return;
    const bool ok = time_against(
        state, [&] { return huge->backend->graph_compute(huge->graph).is_ok(); },
        [&] { return small->backend->graph_compute(small->graph).is_ok(); }, "x_small_pages");
    if (!ok) return;
    state.SetBytesProcessed(static_cast<int64_t>(state.iterations()) * static_cast<int64_t>(huge->weight_bytes));
}

// This CPU's row dots of `type`, one thread, the weights in L2 (see the list at the top).
void BM_QuantDotInCache(benchmark::State& state, DType type) {
    constexpr int64_t kRows = 192, kK = 4096;
    const xb::cpu_kernels::QuantDot& table = xb::cpu_kernels::quant_dot();
    const xb::cpu_kernels::QuantDot::DotFn dot = table.dot[static_cast<int>(type)];
    if (dot == nullptr) return state.SkipWithError("no dot product for this type");
    std::mt19937 rng(1);
    const size_t row_bytes = xb::row_size(type, kK);
    std::vector<std::byte> weights(row_bytes * kRows);
    for (int64_t r = 0; r < kRows; ++r) {
        xb::quantize_row(type, uniform_values(rng, kK, -1, 1).data(), weights.data() + r * row_bytes, kK);
    }
    std::vector<std::byte> activations(xb::cpu_kernels::activation_row_bytes(type, kK));
    table.quantize_activations(type, uniform_values(rng, kK, -1, 1).data(), activations.data(), kK);
    double best = 1e30;
    for (auto _ : state) {
        const auto t0 = std::chrono::steady_clock::now();
        for (int64_t r = 0; r < kRows; ++r) {
            float out[xb::cpu_kernels::kMaxDotColumns];
            dot(kK, weights.data() + r * row_bytes, activations.data(), activations.size(), 1, out);
            benchmark::DoNotOptimize(out);
        }
        const double seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
        best = std::min(best, seconds);
        state.SetIterationTime(seconds);
    }
    state.counters["best_us"] = best * 1e6;
    state.counters["best_GB_per_s"] = static_cast<double>(weights.size()) / best / 1e9;
    state.SetBytesProcessed(static_cast<int64_t>(state.iterations()) * static_cast<int64_t>(weights.size()));
}

void BM_QuantMulMat(benchmark::State& state, DType type) {
    const int64_t m = state.range(0), n = state.range(1), k = state.range(2);
    auto backend = cpu_backend();
    xb::Context ctx;
    xb::Tensor* a = ctx.new_tensor(type, {k, m});
    xb::Tensor* b = ctx.new_tensor(DType::F32, {k, n});
    auto graph = xb::Graph::build({xb::mul_mat(ctx, a, b)});
    auto buffer = xb::alloc_ctx_tensors(ctx, *backend);
    if (!graph.is_ok() || !buffer.is_ok()) return state.SkipWithError("setup failed");
    std::mt19937 rng(1);
    fill_random(*a, rng, -1, 1);
    fill_random(*b, rng, -1, 1);
    run_graph(state, *backend, *graph, 2.0 * static_cast<double>(m * n * k));
}

void BM_QuantDecode(benchmark::State& state, DType type) {
    xb::DecoderParams p;  // configs/llama-decoder.json's sizes
    p.n_tokens = 1;
    p.n_kv = 256;
    p.weight_type = type;
    auto d = cpu_decoder(p);
    if (!d.is_ok()) return state.SkipWithError(d.status().to_string().c_str());
    size_t weight_bytes = 0;
    for (const xb::Tensor* w : (*d)->model.weights()) weight_bytes += w->nbytes();
    run_graph(state, *(*d)->backend, (*d)->graph, p.matmul_flops());
    state.SetBytesProcessed(static_cast<int64_t>(state.iterations()) * static_cast<int64_t>(weight_bytes));
}

void register_quant_benchmarks() {
    for (DType t : kWeightTypes) {
        const std::string name = xb::dtype_name(t);
        benchmark::RegisterBenchmark(("BM_QuantMatVecStream/" + name).c_str(), BM_QuantMatVecStream, t)
            ->Args({4096, 4096})
            ->ArgNames({"M", "K"})
            ->Unit(benchmark::kMillisecond)
            ->UseRealTime();
        benchmark::RegisterBenchmark(("BM_QuantMatVecVsMemcpy/" + name).c_str(), BM_QuantMatVecVsMemcpy, t)
            ->Args({4096, 4096})
            ->ArgNames({"M", "K"})
            ->Iterations(7)
            ->Unit(benchmark::kMillisecond)
            ->UseManualTime();
        benchmark::RegisterBenchmark(("BM_QuantMatVecHugePages/" + name).c_str(), BM_QuantMatVecHugePages, t)
            ->Args({4096, 4096})
            ->ArgNames({"M", "K"})
            ->Iterations(9)
            ->Unit(benchmark::kMillisecond)
            ->UseManualTime();
        if (xb::is_quantized(t)) {
            benchmark::RegisterBenchmark(("BM_QuantDotInCache/" + name).c_str(), BM_QuantDotInCache, t)
                ->Unit(benchmark::kMicrosecond)
                ->UseManualTime();
        }
        benchmark::RegisterBenchmark(("BM_QuantMulMat/" + name).c_str(), BM_QuantMulMat, t)
            ->Args({4096, 1, 4096})
            ->Args({4096, 32, 4096})
            ->Args({4096, 512, 4096})
            ->ArgNames({"M", "N", "K"})
            ->Unit(benchmark::kMillisecond)
            ->UseRealTime();
        benchmark::RegisterBenchmark(("BM_QuantDecode/" + name).c_str(), BM_QuantDecode, t)
            ->Unit(benchmark::kMillisecond)
            ->UseRealTime();
    }
}

// Registered at start-up, like the BENCHMARK macros, but one per weight type from the list above.
const bool registered = (register_quant_benchmarks(), true);

}  // namespace
}  // namespace bench
