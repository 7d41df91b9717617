// graph-bench: Google Benchmark microbenchmarks of xbackend's kernels, graphs and allocator.
//   build/apps/graph-bench --benchmark_filter=MulMat --benchmark_out=results/x.json --benchmark_out_format=json
#include <benchmark/benchmark.h>

BENCHMARK_MAIN();
