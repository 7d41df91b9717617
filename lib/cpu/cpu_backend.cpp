#include "cpu/cpu_backend.hpp"

#include "backend/host_threads.hpp"

namespace xb::cpu {

namespace {

class CpuGraphPlan final : public GraphPlan {
public:
    CpuGraphPlan(const Graph& graph, size_t work_bytes) : graph(graph), work(work_bytes, kHostAlignment) {}
    Graph graph;
    AlignedBytes work;
};

}  // namespace

CpuBackend::CpuBackend(Device& device, CpuOptions options)
    : Backend(device), executor_(options.n_threads > 0 ? options.n_threads : default_host_threads()) {}

bool CpuBackend::set_n_threads(int n_threads) {
    if (n_threads < 1) return false;
    executor_.set_n_threads(n_threads);
    return true;
}

bool CpuBackend::set_abort_callback(AbortCallback callback) {
    hooks_.abort = std::move(callback);
    return true;
}

Status CpuBackend::graph_compute_async(const Graph& graph) { return executor_.compute(graph, hooks_); }

Result<std::unique_ptr<GraphPlan>> CpuBackend::graph_plan_create(const Graph& graph) {
    const size_t need = executor_.work_size(graph);
    auto plan = std::make_unique<CpuGraphPlan>(graph, need);
    if (need > 0 && plan->work.data() == nullptr) {
        return Status(StatusCode::OutOfMemory, "CPU: cannot allocate " + std::to_string(need) + " bytes of scratch");
    }
    return std::unique_ptr<GraphPlan>(std::move(plan));
}

Status CpuBackend::graph_plan_compute(GraphPlan& plan) {
    auto* cpu_plan = dynamic_cast<CpuGraphPlan*>(&plan);
    if (cpu_plan == nullptr) return Status(StatusCode::InvalidArgument, "CPU: the plan was made by another backend");
    return executor_.compute(cpu_plan->graph, std::span<std::byte>(cpu_plan->work.data(), cpu_plan->work.size()), hooks_);
}

}  // namespace xb::cpu
