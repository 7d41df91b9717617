#include "cpu_kernels/graph_executor.hpp"

#include <omp.h>

#include <algorithm>
#include <atomic>
#include <mutex>
#include <string>

#include "backend/host_buffer.hpp"
#include "cpu_kernels/kernels.hpp"

namespace xb::cpu_kernels {

namespace {

// The threads of one OpenMP parallel region computing a graph.
//
// Stopping (on an error or an abort) must be decided identically by every thread, or some would
// wait forever at a barrier the others skipped. A stop requested while node i runs is read by all
// threads right after the barrier that ends node i. A thread that is already on node i+1 may set a
// stop for i+1 meanwhile, so requests are kept per node parity: the slot of node i cannot be
// touched again until every thread has passed the barrier of node i+1, after its read.
class OmpTeam final : public ThreadTeam {
public:
    void barrier() override {
#pragma omp barrier
    }
    void report(Status error, int node_index) override {
        {
            std::lock_guard<std::mutex> lock(mutex_);
            if (error_.is_ok()) {
                error_ = std::move(error);
                error_node_ = node_index;
            }
        }
        request_stop(node_index);
    }
    void request_stop(int node_index) { stop_[node_index % 2].store(true, std::memory_order_release); }
    // Only valid between the barrier that ends node `node_index` and the next barrier.
    bool stop_requested(int node_index) const { return stop_[node_index % 2].load(std::memory_order_acquire); }
    // The first error, with the index of its node; Ok when none was reported.
    std::pair<Status, int> error() {
        std::lock_guard<std::mutex> lock(mutex_);
        return {error_, error_node_};
    }

private:
    std::mutex mutex_;
    Status error_;
    int error_node_ = -1;
    std::atomic<bool> stop_[2] = {false, false};
};

Status check_computable(const Graph& graph) {
    for (const Tensor* node : graph.nodes()) {
        if (computes_nothing(*node)) continue;
        if (node->data == nullptr) {
            return Status(StatusCode::InvalidArgument, "CPU: node '" + node->display_name() + "' (" +
                                                           node->op_label() + ") is not allocated");
        }
        if (!supports_node(*node)) {
            return Status(StatusCode::NotSupported, "CPU: node '" + node->display_name() + "' (" +
                                                        node->op_label() + ") is not supported");
        }
    }
    return Status::ok();
}

}  // namespace

GraphExecutor::GraphExecutor(int n_threads) : n_threads_(n_threads) {}

size_t GraphExecutor::work_size(const Graph& graph) const {
    size_t bytes = 0;
    for (const Tensor* node : graph.nodes()) {
        if (!computes_nothing(*node)) bytes = std::max(bytes, kernel_work_size(*node, n_threads_));
    }
    return bytes;
}

Status GraphExecutor::compute(const Graph& graph, const ExecutorHooks& hooks) {
    const size_t need = work_size(graph);
    if (need > work_.size()) {
        work_ = AlignedBytes(need, kHostAlignment);
        if (work_.data() == nullptr) {
            return Status(StatusCode::OutOfMemory, "CPU: cannot allocate " + std::to_string(need) + " bytes of scratch");
        }
    }
    return compute(graph, std::span<std::byte>(work_.data(), work_.size()), hooks);
}

Status GraphExecutor::compute(const Graph& graph, std::span<std::byte> work, const ExecutorHooks& hooks) const {
    XB_RETURN_IF_ERROR(check_computable(graph));
    OmpTeam team;
    std::atomic<bool> aborted{false};
    // One parallel region for the whole graph; one barrier after each computed node. Thread 0
    // polls the abort callback before that barrier (see OmpTeam for why stops are per parity).
#pragma omp parallel num_threads(n_threads_)
    {
        ComputeParams params;
        params.ith = omp_get_thread_num();
        params.nth = omp_get_num_threads();
        params.work = work;
        params.team = &team;
        for (int i = 0; i < graph.n_nodes(); ++i) {
            Tensor& node = *graph.nodes()[static_cast<size_t>(i)];
            if (computes_nothing(node)) continue;
            params.node_index = i;
            find_kernel(node)(params, node);
            if (hooks.after_node) {
                team.barrier();  // the node's output is complete only when every thread is done
                if (params.ith == 0) hooks.after_node(i, node);
            }
            if (params.ith == 0 && hooks.abort && hooks.abort()) {
                aborted.store(true);
                team.request_stop(i);
            }
            team.barrier();
            if (team.stop_requested(i)) break;
        }
    }
    auto [error, node_index] = team.error();
    if (!error.is_ok()) {
        return Status(error.code(), error.message() + " (node " + std::to_string(node_index) + " '" +
                                        graph.node(node_index)->display_name() + "')");
    }
    if (aborted.load()) return Status(StatusCode::Aborted, "CPU: graph computation aborted by the callback");
    return Status::ok();
}

}  // namespace xb::cpu_kernels
