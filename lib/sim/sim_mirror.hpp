// HostMirror: a graph whose tensors carry device addresses, translated for the CPU kernels.
//
// Every node of the graph, and every source a node reads, gets a shadow tensor with the same
// metadata (type, shape, strides, op, params, flags, name) whose `data` is the host storage behind
// the device address and whose `src` point at the sources' shadows. The CPU GraphExecutor then
// computes the shadows, writing the device's storage. Mirrors are built by the host when work is
// queued, so the worker never reads the caller's tensors.
#pragma once

#include <deque>
#include <memory>
#include <unordered_map>

#include "core/graph.hpp"
#include "core/status.hpp"
#include "core/tensor.hpp"

namespace xb::sim {

class SimDevice;

class HostMirror {
public:
    // InvalidArgument when a tensor the computation touches is not allocated, or lies outside
    // `device`'s memory (host memory or another device's cannot be read by this device).
    static Result<std::shared_ptr<HostMirror>> build(const Graph& graph, const SimDevice& device);

    HostMirror(const HostMirror&) = delete;
    HostMirror& operator=(const HostMirror&) = delete;

    // The shadow graph: node i is the shadow of the original's node i.
    const Graph& graph() const { return graph_; }

private:
    explicit HostMirror(const SimDevice& device) : device_(&device) {}

    Result<Tensor*> shadow_of(const Tensor& t);
    Status add_node(const Tensor& node);

    const SimDevice* device_;
    std::deque<Tensor> shadows_;  // deque: shadows never move once made
    std::unordered_map<const Tensor*, Tensor*> shadow_by_tensor_;
    Graph graph_;
};

}  // namespace xb::sim
