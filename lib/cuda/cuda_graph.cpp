#include "cuda/cuda_graph.hpp"

#include "cuda/cuda_check.hpp"

namespace xb::cuda {

namespace detail {
void GraphDestroy::operator()(cudaGraph_t g) const { static_cast<void>(XB_CUDA_STATUS(cudaGraphDestroy(g))); }
void GraphExecDestroy::operator()(cudaGraphExec_t e) const {
    static_cast<void>(XB_CUDA_STATUS(cudaGraphExecDestroy(e)));
}
}  // namespace detail

Result<GraphPtr> capture_launches(cudaStream_t stream, const std::function<Status()>& launches) {
    // Relaxed: other threads may still call unsafe APIs (allocations of other backends) meanwhile.
    XB_CUDA_RETURN_IF_ERROR(cudaStreamBeginCapture(stream, cudaStreamCaptureModeRelaxed));
    const Status launched = launches();
    cudaGraph_t graph = nullptr;
    const cudaError_t ended = cudaStreamEndCapture(stream, &graph);
    GraphPtr owned(graph);
    // A failed capture leaves its error in the thread's last-error slot: cleared, so that the
    // launches that follow are not blamed for it.
    static_cast<void>(cudaGetLastError());
    if (!launched.is_ok()) return launched;
    if (ended != cudaSuccess) return XB_CUDA_STATUS(ended);
    if (owned == nullptr) return Status(StatusCode::Internal, "the capture of the graph's launches gave no graph");
    return owned;
}

Status ReplayableGraph::set(const GraphPtr& graph) {
    if (exec_ != nullptr) {
        cudaGraphExecUpdateResultInfo info{};
        if (cudaGraphExecUpdate(exec_.get(), graph.get(), &info) == cudaSuccess) return Status::ok();
        // A topology the update cannot take (the executable graph is left as it was): a new one,
        // which replaces the old only once it exists.
        static_cast<void>(cudaGetLastError());
    }
    cudaGraphExec_t exec = nullptr;
    XB_CUDA_RETURN_IF_ERROR(cudaGraphInstantiate(&exec, graph.get(), 0));
    exec_.reset(exec);
    return Status::ok();
}

Status ReplayableGraph::launch(cudaStream_t stream) const {
    XB_CUDA_RETURN_IF_ERROR(cudaGraphLaunch(exec_.get(), stream));
    return Status::ok();
}

}  // namespace xb::cuda
