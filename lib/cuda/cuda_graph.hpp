// A backend's captured CUDA graph: capturing a stream's launches into a graph and replaying the
// graph as one launch (the policy of when to do which is graph_replay.hpp's).
#pragma once

#include <cuda_runtime.h>

#include <functional>
#include <memory>
#include <type_traits>

#include "core/status.hpp"

namespace xb::cuda {

namespace detail {
struct GraphDestroy {
    void operator()(cudaGraph_t g) const;
};
struct GraphExecDestroy {
    void operator()(cudaGraphExec_t e) const;
};
}  // namespace detail

using GraphPtr = std::unique_ptr<std::remove_pointer_t<cudaGraph_t>, detail::GraphDestroy>;
using GraphExecPtr = std::unique_ptr<std::remove_pointer_t<cudaGraphExec_t>, detail::GraphExecDestroy>;

// Runs `launches` with `stream` in capture mode and returns what they queued as a graph (nothing
// runs). When a launch fails or queues something a capture cannot hold, the capture is ended and
// its error cleared (a capture's errors do not break the stream), and the failure is returned:
// the stream can then take the same launches one by one.
Result<GraphPtr> capture_launches(cudaStream_t stream, const std::function<Status()>& launches);

// The executable form of the graph a backend replays.
class ReplayableGraph {
public:
    // Makes `graph` the one to replay: updates the executable graph held in place when only the
    // kernels' arguments differ (cheaper), else instantiates it anew.
    Status set(const GraphPtr& graph);
    // Queues the whole graph on `stream`.
    Status launch(cudaStream_t stream) const;
    bool empty() const { return exec_ == nullptr; }

private:
    GraphExecPtr exec_;
};

}  // namespace xb::cuda
