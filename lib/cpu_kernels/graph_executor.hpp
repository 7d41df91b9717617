// GraphExecutor: computes the nodes of a graph with the CPU kernels on a team of OpenMP threads.
// The CPU backend is a thin layer over it; the simulated device computes with it too.
#pragma once

#include <functional>
#include <span>

#include "backend/backend.hpp"
#include "core/aligned_bytes.hpp"
#include "core/graph.hpp"
#include "core/status.hpp"

namespace xb::cpu_kernels {

struct ExecutorHooks {
    // Polled by one thread after each node; true stops the computation (status Aborted).
    AbortCallback abort;
    // Called by one thread after node `index` is complete and before the next one starts.
    std::function<void(int index, Tensor& node)> after_node;
};

class GraphExecutor {
public:
    explicit GraphExecutor(int n_threads);

    int n_threads() const { return n_threads_; }
    void set_n_threads(int n_threads) { n_threads_ = n_threads; }

    // Scratch bytes the kernels of `graph` need with this thread count.
    size_t work_size(const Graph& graph) const;
    // Computes every node of `graph` in order, with `work` as scratch (at least work_size bytes).
    Status compute(const Graph& graph, std::span<std::byte> work, const ExecutorHooks& hooks = {}) const;
    // The same with the executor's own scratch, grown as graphs need.
    Status compute(const Graph& graph, const ExecutorHooks& hooks = {});

private:
    int n_threads_;
    AlignedBytes work_;
};

}  // namespace xb::cpu_kernels
