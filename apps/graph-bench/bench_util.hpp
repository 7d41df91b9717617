// Shared helpers of the graph-bench benchmarks.
#pragma once

#include <benchmark/benchmark.h>

#include <memory>
#include <random>
#include <vector>

#include "backend/backend.hpp"
#include "backend/buffer.hpp"
#include "core/context.hpp"
#include "core/graph.hpp"
#include "models/decoder.hpp"

namespace bench {

std::unique_ptr<xb::Backend> cpu_backend();
// n values uniform in [lo, hi) drawn from rng; fill_random sets a tensor to the next nelements() of
// them, so a reference fed uniform_values from the same seed and order gets the same inputs.
std::vector<float> uniform_values(std::mt19937& rng, int64_t n, float lo, float hi);
void fill_random(xb::Tensor& t, std::mt19937& rng, float lo, float hi);
// Computes `graph` every iteration; adds a GFLOPS counter when flops > 0.
void run_graph(benchmark::State& state, xb::Backend& backend, const xb::Graph& graph, double flops);

// Fills a llama decoder's weights (uniform +-0.05) and its tokens, positions and causal mask;
// the weights must be allocated. False when a tensor cannot be set.
bool fill_decoder(const xb::DecoderParams& p, const xb::Decoder& model);

// A decoder ready to compute on the CPU: built, allocated in one buffer and filled (fill_decoder).
struct CpuDecoder {
    std::unique_ptr<xb::Backend> backend;
    xb::Context ctx;
    xb::Decoder model;
    xb::Graph graph;
    std::unique_ptr<xb::MultiBuffer> buffer;
};
// The error's text when any step fails.
xb::Result<std::unique_ptr<CpuDecoder>> cpu_decoder(const xb::DecoderParams& p);

// Bytes a memory-bound node moves: every source and the result (of a get_rows table only the rows
// gathered).
size_t bytes_moved(const xb::Tensor& node);

}  // namespace bench
