// Shared helpers of the graph-bench benchmarks.
#pragma once

#include <benchmark/benchmark.h>

#include <memory>
#include <random>

#include "backend/backend.hpp"
#include "core/context.hpp"
#include "core/graph.hpp"

namespace xb {
struct LlamaParams;
struct LlamaDecoder;
}  // namespace xb

namespace bench {

std::unique_ptr<xb::Backend> cpu_backend();
void fill_random(xb::Tensor& t, std::mt19937& rng, float lo, float hi);
// Computes `graph` every iteration; adds a GFLOPS counter when flops > 0.
void run_graph(benchmark::State& state, xb::Backend& backend, const xb::Graph& graph, double flops);

// Fills a llama decoder's weights (uniform +-0.05) and its tokens, positions and causal mask;
// the weights must be allocated. False when a tensor cannot be set.
bool fill_decoder(const xb::LlamaParams& p, const xb::LlamaDecoder& model);

// Bytes a memory-bound node moves: every source and the result (of a get_rows table only the rows
// gathered).
size_t bytes_moved(const xb::Tensor& node);

}  // namespace bench
