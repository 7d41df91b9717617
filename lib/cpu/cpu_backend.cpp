#include "cpu/cpu_backend.hpp"

#include <omp.h>

#include <algorithm>
#include <atomic>
#include <mutex>

#include "cpu/kernels.hpp"

namespace xb::cpu {

namespace {

// The threads of one OpenMP parallel region computing a graph.
class OmpTeam final : public ThreadTeam {
public:
    void barrier() override {
#pragma omp barrier
    }
    void report(Status error) override {
        std::lock_guard<std::mutex> lock(mutex_);
        if (error_.is_ok()) error_ = std::move(error);
        failed_.store(true, std::memory_order_release);
    }
    bool failed() const { return failed_.load(std::memory_order_acquire); }
    Status take_error() {
        std::lock_guard<std::mutex> lock(mutex_);
        return error_;
    }

private:
    std::mutex mutex_;
    Status error_;
    std::atomic<bool> failed_{false};
};

bool computes_nothing(const Tensor& node) {
    return node.op == Op::None || op_is_view(node.op) || node.is_empty();
}

class CpuGraphPlan final : public GraphPlan {
public:
    CpuGraphPlan(const Graph& graph, size_t work_bytes) : graph(graph), work(work_bytes, CpuBufferType::kAlignment) {}
    Graph graph;
    AlignedBytes work;
};

}  // namespace

CpuBackend::CpuBackend(Device& device, CpuOptions options)
    : Backend(device), n_threads_(options.n_threads > 0 ? options.n_threads : default_thread_count()) {}

bool CpuBackend::set_n_threads(int n_threads) {
    if (n_threads < 1) return false;
    n_threads_ = n_threads;
    return true;
}

bool CpuBackend::set_abort_callback(AbortCallback callback) {
    abort_ = std::move(callback);
    return true;
}

size_t CpuBackend::work_size(const Graph& graph) const {
    size_t bytes = 0;
    for (const Tensor* node : graph.nodes()) {
        if (!computes_nothing(*node)) bytes = std::max(bytes, kernel_work_size(*node, n_threads_));
    }
    return bytes;
}

Status CpuBackend::graph_compute_async(const Graph& graph) {
    const size_t need = work_size(graph);
    if (need > work_.size()) {
        work_ = AlignedBytes(need, CpuBufferType::kAlignment);
        if (work_.data() == nullptr) {
            return Status(StatusCode::OutOfMemory, "CPU: cannot allocate " + std::to_string(need) + " bytes of scratch");
        }
    }
    return compute_nodes(graph, std::span<std::byte>(work_.data(), work_.size()));
}

Result<std::unique_ptr<GraphPlan>> CpuBackend::graph_plan_create(const Graph& graph) {
    const size_t need = work_size(graph);
    auto plan = std::make_unique<CpuGraphPlan>(graph, need);
    if (need > 0 && plan->work.data() == nullptr) {
        return Status(StatusCode::OutOfMemory, "CPU: cannot allocate " + std::to_string(need) + " bytes of scratch");
    }
    return std::unique_ptr<GraphPlan>(std::move(plan));
}

Status CpuBackend::graph_plan_compute(GraphPlan& plan) {
    auto* cpu_plan = dynamic_cast<CpuGraphPlan*>(&plan);
    if (cpu_plan == nullptr) return Status(StatusCode::InvalidArgument, "CPU: the plan was made by another backend");
    return compute_nodes(cpu_plan->graph, std::span<std::byte>(cpu_plan->work.data(), cpu_plan->work.size()));
}

Status CpuBackend::compute_nodes(const Graph& graph, std::span<std::byte> work) {
    for (const Tensor* node : graph.nodes()) {
        if (!computes_nothing(*node) && (node->data == nullptr || !supports_node(*node))) {
            return Status(node->data == nullptr ? StatusCode::InvalidArgument : StatusCode::NotSupported,
                          "CPU: node '" + node->display_name() + "' (" + op_name(node->op) + ") " +
                              (node->data == nullptr ? "is not allocated" : "is not supported"));
        }
    }
    OmpTeam team;
    std::atomic<bool> aborted{false};
    std::atomic<int> failed_node{-1};
    // One parallel region for the whole graph; one barrier after each computed node. Thread 0
    // polls the abort callback before that barrier, so every thread sees the same decision after it.
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
            find_kernel(node)(params, node);
            if (params.ith == 0 && abort_ && abort_()) aborted.store(true);
            team.barrier();
            if (team.failed()) {
                // Every report about node i happened before the barrier, so this is the node.
                if (params.ith == 0) failed_node.store(i);
                break;
            }
            if (aborted.load()) break;
        }
    }
    if (team.failed()) {
        const Status error = team.take_error();
        const int i = failed_node.load();
        const std::string where = i >= 0 ? " (node " + std::to_string(i) + " '" + graph.node(i)->display_name() + "')" : "";
        return Status(error.code(), error.message() + where);
    }
    if (aborted.load()) return Status(StatusCode::Aborted, "CPU: graph computation aborted by the callback");
    return Status::ok();
}

}  // namespace xb::cpu
