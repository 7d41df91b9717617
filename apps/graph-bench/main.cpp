// graph-bench: Google Benchmark microbenchmarks of xbackend's kernels, graphs and allocator.
//   build/apps/graph-bench --benchmark_filter=MulMat --benchmark_out=results/x.json --benchmark_out_format=json
#include <benchmark/benchmark.h>

#include <cstdio>
#include <string>
#include <string_view>
#include <vector>

#include "builtin/environment.hpp"
#include "cli.hpp"

namespace {

// What the benchmarks are, before Google Benchmark's own flags (which --help prints next).
constexpr const char* kFamilies = R"(graph-bench: microbenchmarks of xbackend's kernels, graphs, scheduler and allocator, each next
to a reference measured in the same run (OpenBLAS, memcpy, a bandwidth probe).

Benchmark families (--benchmark_list_tests lists every case, --benchmark_filter=REGEX picks some):
  BM_MulMat/{f32,f16}/M:N:K        mul_mat on the CPU backend at decoder shapes (32 tokens and 1)
  BM_MulMat/*_sweep                a 4096-square weight over batch sizes 8..512 (dot tiles vs packed path)
  BM_MulMatOpenBLAS[/sweep]        cblas_sgemm on the same shapes: the reference for the two above
  BM_Op/...                        element-wise, norm, soft_max, rope, cpy kernels (GB/s)
  BM_Add, BM_Memcpy, BM_ReadBandwidth   an f32 add against memcpy; read bandwidth of the machine
  BM_Quant{Decode,MulMat,MatVecStream}  quantized block decoding and products per format
  BM_QuantMatVecVsMemcpy/TYPE      one-token products from memory, each timed against a memcpy of
                                   the same bytes right after it (x_memcpy: the ratio of the two)
  BM_LlamaDecoder/...              the 4-layer decoder graph (flash or soft_max attention, one token)
  BM_LlamaDecoderMatMuls/...       the same graph's matrix products alone (the decoder's floor)
  BM_LlamaDecoderSched/blas_cpu    the decoder through the scheduler on [BLAS, CPU]
  BM_SchedAllocGraph/{blas,sim}_cpu/LAYERS   scheduler reset + alloc_graph per node (no compute)
  BM_AllocGraph, BM_AllocReserve   the graph allocator's alloc_graph and reserve per node
  BM_CudaMemcpyD2D, BM_CudaOp/...  (CUDA builds with a GPU) kernels against device-to-device memcpy

Examples:
  graph-bench --benchmark_filter='MulMat.*sweep' --benchmark_min_time=1
  graph-bench --benchmark_filter=SchedAllocGraph --benchmark_repetitions=3 --benchmark_report_aggregates_only=true

)";

// Google Benchmark's flags (1.7, as its --help lists them), for the suggestion when one is misspelled.
const std::vector<std::string> kBenchmarkFlags = {
    "--benchmark_list_tests", "--benchmark_filter", "--benchmark_min_time", "--benchmark_min_warmup_time",
    "--benchmark_repetitions", "--benchmark_enable_random_interleaving", "--benchmark_report_aggregates_only",
    "--benchmark_display_aggregates_only", "--benchmark_format", "--benchmark_out", "--benchmark_out_format",
    "--benchmark_color", "--benchmark_counters_tabular", "--benchmark_context", "--benchmark_time_unit",
    "--benchmark_perf_counters", "--v", "--help"};

}  // namespace

int main(int argc, char** argv) {
    for (int i = 1; i < argc; ++i) {
        const std::string_view arg = argv[i];
        if (arg == "--help" || arg == "-h") std::fputs(kFamilies, stdout);
    }
    benchmark::Initialize(&argc, argv);
    if (argc > 1) {  // what Initialize left is no flag of Google Benchmark's: one line, as every tool says it
        const std::vector<std::string> extras(argv + 1, argv + argc);
        xb::tools::tell("graph-bench", xb::tools::unknown_arguments_message(extras, kBenchmarkFlags));
        return xb::tools::kExitUsage;
    }
    if (xb::Status s = xb::check_environment(); !s.is_ok()) return xb::tools::fail("graph-bench", s);
    benchmark::RunSpecifiedBenchmarks();
    benchmark::Shutdown();
    return 0;
}
