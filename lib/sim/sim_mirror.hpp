// HostMirror: a graph whose tensors carry device addresses, translated for the CPU kernels.
//
// Every node of the graph that computes something (views do not), and every source such a node
// reads, gets a shadow tensor with the same
// metadata (type, shape, strides, op, params, flags, name) whose `data` is the host storage behind
// the device address and whose `src` point at the sources' shadows. The CPU GraphExecutor then
// computes the shadows, writing the device's storage. Mirrors are built by the host when work is
// queued, so the worker never reads the caller's tensors.
//
// A mul_mat whose weight is split by rows over simulated devices (backend/row_split_buffer.hpp)
// becomes one product per slice, each into scratch rows of the mirror's own, then copied into the
// node's rows: what each device computes and the main one gathers. The activations sent to each
// other device and the rows sent back are modelled as peer copies (peer_bytes).
#pragma once

#include <deque>
#include <memory>
#include <unordered_map>
#include <vector>

#include "core/aligned_bytes.hpp"
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

    // The shadow graph of the computing nodes, in the original's order.
    const Graph& graph() const { return graph_; }
    // The original graph's index of shadow node i (fault_node=N counts the original's nodes; -1
    // for a row-split product's partial products).
    int original_index(int i) const { return original_index_[static_cast<size_t>(i)]; }
    // Bytes each computation of the mirror moves between simulated devices for row-split products.
    const std::vector<size_t>& peer_bytes() const { return peer_bytes_; }

private:
    explicit HostMirror(const SimDevice& device) : device_(&device) {}

    Result<Tensor*> shadow_of(const Tensor& t);
    Status add_node(const Tensor& node, int index);
    Status add_row_split_product(const Tensor& node, int index);

    const SimDevice* device_;
    std::deque<Tensor> shadows_;  // deque: shadows never move once made
    std::unordered_map<const Tensor*, Tensor*> shadow_by_tensor_;
    Graph graph_;
    std::vector<int> original_index_;
    std::deque<AlignedBytes> scratch_;  // the slices' products before they are gathered
    std::vector<size_t> peer_bytes_;
};

}  // namespace xb::sim
