// The llama-style decoder of the foundation issue on the CPU backend, with the two references its
// targets are read against in the same run (README: Benchmarks, results/cpu/):
//   BM_LlamaDecoder         the whole decoder;
//   BM_LlamaDecoderMatMuls  the same decoder's matrix products alone (each mul_mat node's shapes and
//                           types, on fresh contiguous operands): the floor for its total time;
//   BM_ReadBandwidth        reading a buffer larger than the last-level cache with 1, 2, 4 ... and
//                           all the CPU's threads (threads:N), plain loads: the floor for a
//                           one-token decode on N threads, which reads every weight once (its
//                           `streamed_bytes` counter).
#include <benchmark/benchmark.h>

#include <algorithm>
#include <cstdlib>
#include <cstring>
#include <span>
#include <thread>
#include <vector>

#include "alloc/context_alloc.hpp"
#include "backend/host_buffer.hpp"
#include "backend/huge_pages.hpp"
#include "backend/tensor_io.hpp"
#include "bench_util.hpp"
#include "backend/registry.hpp"
#include "builtin/builtin_backends.hpp"
#include "models/decoder.hpp"
#include "core/ops.hpp"
#include "cpu_kernels/weight_prefetch.hpp"
#include "sched/scheduler.hpp"

namespace bench {
namespace {

// The decoder cases: the foundation issue's 32 tokens without a cache, the CPU-speed issue's 32
// tokens and one token with a 256-position cache.
struct DecoderCase {
    xb::DType weight_type;
    bool flash_attn;
    int n_tokens;
    int n_kv;
};

xb::DecoderParams decoder_params(const DecoderCase& c) {
    xb::DecoderParams p;  // n_embd 1024, n_ff 2816, 4 layers, 32000-wide output
    p.weight_type = c.weight_type;
    p.flash_attn = c.flash_attn;
    p.n_tokens = c.n_tokens;
    p.n_kv = c.n_kv;
    return p;
}

// Bytes one computation reads from the decoder's weights and cache: every weight but the token
// embedding, of which only the batch's rows; the whole cache.
size_t streamed_bytes(const xb::DecoderParams& p, const xb::Decoder& m) {
    size_t bytes = xb::row_size(m.tok_embd->type, m.tok_embd->ne[0]) * static_cast<size_t>(p.n_tokens);
    for (const xb::Tensor* w : m.weights()) {
        if (w != m.tok_embd) bytes += w->nbytes();
    }
    return bytes;
}

void BM_LlamaDecoder(benchmark::State& state, DecoderCase c) {
    const xb::DecoderParams p = decoder_params(c);
    auto d = cpu_decoder(p);
    if (!d.is_ok()) return state.SkipWithError(d.status().to_string().c_str());
    run_graph(state, *(*d)->backend, (*d)->graph, p.matmul_flops());
    state.counters["nodes"] = (*d)->graph.n_nodes();
    state.counters["streamed_bytes"] = static_cast<double>(streamed_bytes(p, (*d)->model));
}

// Every mul_mat node of the decoder's graph again, on new contiguous operands of the same types
// and shapes, all in one graph (no node depends on another).
void BM_LlamaDecoderMatMuls(benchmark::State& state, DecoderCase c) {
    const xb::DecoderParams p = decoder_params(c);
    xb::Context decoder_ctx;
    auto model = xb::build_decoder(decoder_ctx, p);
    if (!model.is_ok()) return state.SkipWithError(model.status().to_string().c_str());
    auto decoder = xb::Graph::build(model->graph_outputs);
    if (!decoder.is_ok()) return state.SkipWithError("setup failed");
    xb::Context ctx;
    std::vector<xb::Tensor*> products, operands;
    for (const xb::Tensor* node : decoder->nodes()) {
        if (node->op != xb::Op::MulMat) continue;
        const xb::Tensor& a = *node->src[0];
        const xb::Tensor& b = *node->src[1];
        operands.push_back(ctx.new_tensor(a.type, {a.ne[0], a.ne[1], a.ne[2], a.ne[3]}));
        operands.push_back(ctx.new_tensor(b.type, {b.ne[0], b.ne[1], b.ne[2], b.ne[3]}));
        products.push_back(xb::mul_mat(ctx, operands[operands.size() - 2], operands.back()));
    }
    auto backend = cpu_backend();
    auto graph = xb::Graph::build(products);
    auto buffer = xb::alloc_ctx_tensors(ctx, *backend);
    if (!graph.is_ok() || !buffer.is_ok()) return state.SkipWithError("setup failed");
    std::mt19937 rng(5);
    for (xb::Tensor* t : operands) fill_random(*t, rng, -0.05f, 0.05f);
    run_graph(state, *backend, *graph, p.matmul_flops());
    state.counters["products"] = static_cast<double>(products.size());
}

// Reads a 512 MiB buffer (beyond any last-level cache here) with state.range(0) threads, each its
// own slice (a decode on 2 threads is judged against the rate of 2, not of the whole machine), in plain compiler-vectorised loads, asking for the line 4 KiB
// ahead as the one-token products do (cpu_kernels/weight_prefetch.hpp): without it this VM's
// cores wait out their misses and the figure was 15 GB/s where those products stream at 20-25.
void BM_ReadBandwidth(benchmark::State& state) {
    const size_t n = (size_t{512} << 20) / sizeof(float);
    const auto n_threads = static_cast<unsigned>(state.range(0));
    // In the pages the CPU's weight buffers get (backend/huge_pages.hpp): the decode is judged
    // against what the machine gives a reader of those.
    const xb::AlignedBytes bytes = xb::allocate_host_bytes(n * sizeof(float), xb::kHostAlignment, true);
    if (bytes.data() == nullptr) return state.SkipWithError("cannot allocate 512 MiB");
    const std::span<float> data(reinterpret_cast<float*>(bytes.data()), n);
    for (size_t i = 0; i < n; ++i) data[i] = static_cast<float>(i & 1023);
    std::vector<float> sums(n_threads);
    for (auto _ : state) {
        std::vector<std::thread> threads;
        for (unsigned t = 0; t < n_threads; ++t) {
            threads.emplace_back([&, t] {
                const size_t begin = n * t / n_threads, end = n * (t + 1) / n_threads;
                float lanes[16] = {};
                for (size_t i = begin; i + 16 <= end; i += 16) {
                    xb::cpu_kernels::prefetch_lines(
                        reinterpret_cast<uintptr_t>(data.data() + i) + xb::cpu_kernels::kWeightPrefetchDistance, 64);
                    for (int k = 0; k < 16; ++k) lanes[k] += data[i + static_cast<size_t>(k)];
                }
                float total = 0.0f;
                for (float v : lanes) total += v;
                sums[t] = total;
            });
        }
        for (std::thread& th : threads) th.join();
        benchmark::DoNotOptimize(sums.data());
    }
    state.SetBytesProcessed(static_cast<int64_t>(state.iterations()) * static_cast<int64_t>(n * sizeof(float)));
    state.counters["threads"] = n_threads;
}

// The same decoder through the scheduler on [accel, CPU], weights in a CPU weights buffer, so the
// accelerator takes what it supports (BLAS: the matrix products) and the CPU the rest.
void BM_LlamaDecoderSched(benchmark::State& state, const char* accel) {
    xb::DecoderParams p;
    auto a = xb::global_registry().init_by_name(accel);
    if (!a.is_ok()) return state.SkipWithError("device missing");
    auto cpu = cpu_backend();
    xb::Context ctx;
    auto model = xb::build_decoder(ctx, p);
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

constexpr DecoderCase kF32Flash{xb::DType::F32, true, 32, 0}, kF16Flash{xb::DType::F16, true, 32, 0},
    kF32Softmax{xb::DType::F32, false, 32, 0}, kF32FlashKv{xb::DType::F32, true, 32, 256},
    kF32SoftmaxKv{xb::DType::F32, false, 32, 256}, kF32TokenKv{xb::DType::F32, true, 1, 256};
BENCHMARK_CAPTURE(BM_LlamaDecoder, f32_flash, kF32Flash)->Unit(benchmark::kMillisecond)->UseRealTime();
BENCHMARK_CAPTURE(BM_LlamaDecoder, f16_flash, kF16Flash)->Unit(benchmark::kMillisecond)->UseRealTime();
BENCHMARK_CAPTURE(BM_LlamaDecoder, f32_softmax, kF32Softmax)->Unit(benchmark::kMillisecond)->UseRealTime();
BENCHMARK_CAPTURE(BM_LlamaDecoder, f32_flash_kv256, kF32FlashKv)->Unit(benchmark::kMillisecond)->UseRealTime();
BENCHMARK_CAPTURE(BM_LlamaDecoderMatMuls, f32_flash_kv256, kF32FlashKv)->Unit(benchmark::kMillisecond)->UseRealTime();
BENCHMARK_CAPTURE(BM_LlamaDecoder, f32_softmax_kv256, kF32SoftmaxKv)->Unit(benchmark::kMillisecond)->UseRealTime();
BENCHMARK_CAPTURE(BM_LlamaDecoderMatMuls, f32_softmax_kv256, kF32SoftmaxKv)->Unit(benchmark::kMillisecond)->UseRealTime();
BENCHMARK_CAPTURE(BM_LlamaDecoder, f32_token_kv256, kF32TokenKv)->Unit(benchmark::kMillisecond)->UseRealTime();
BENCHMARK_CAPTURE(BM_LlamaDecoderMatMuls, f32_token_kv256, kF32TokenKv)->Unit(benchmark::kMillisecond)->UseRealTime();
// 1, 2, 4 ... threads below the CPU's count, then the count itself; or only XB_READ_THREADS (a
// benchmark script's thread count, which may be none of those).
void ReadThreadCounts(benchmark::internal::Benchmark* b) {
    if (const char* asked = std::getenv("XB_READ_THREADS"); asked != nullptr && std::atoi(asked) > 0) {
        b->Arg(std::atoi(asked));
        return;
    }
    const int all = static_cast<int>(std::max(1u, std::thread::hardware_concurrency()));
    for (int t = 1; t < all; t *= 2) b->Arg(t);
    b->Arg(all);
}
BENCHMARK(BM_ReadBandwidth)->ArgName("threads")->Apply(ReadThreadCounts)->Unit(benchmark::kMillisecond)->UseRealTime();
BENCHMARK_CAPTURE(BM_LlamaDecoderSched, blas_cpu, "BLAS")->Unit(benchmark::kMillisecond)->UseRealTime();

}  // namespace
}  // namespace bench
