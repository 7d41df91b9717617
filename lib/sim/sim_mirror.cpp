#include "sim/sim_mirror.hpp"

#include <string>

#include "backend/tensor_io.hpp"
#include "host/graph_executor.hpp"
#include "sim/sim_buffer.hpp"
#include "sim/sim_device.hpp"

namespace xb::sim {

namespace {

// Where t's bytes live, for messages: "CPU memory", "SIM1 memory", "no buffer".
std::string memory_of(const Tensor& t) {
    const Buffer* b = storage_buffer(t);
    return b == nullptr ? std::string("no buffer") : std::string(b->name()) + " memory";
}

// The host storage behind t's device address; nullptr when t has no data.
Result<void*> translate(const Tensor& t, const SimDevice& device) {
    if (t.data == nullptr) return static_cast<void*>(nullptr);
    const SimBuffer* buffer = sim_storage(t);
    if (buffer == nullptr || &buffer->sim_device() != &device) {
        return Status(StatusCode::InvalidArgument, std::string(device.name()) + ": tensor '" + t.display_name() +
                                                       "' is in " + memory_of(t) + ", which " + device.name() +
                                                       " cannot read");
    }
    if (!buffer->contains(t.data, t.nbytes())) {
        return Status(StatusCode::InvalidArgument, std::string(device.name()) + ": tensor '" + t.display_name() +
                                                       "' lies outside its buffer");
    }
    return static_cast<void*>(buffer->host_address(t.data));
}

// The metadata of t, without its links to other tensors.
void copy_metadata(const Tensor& t, Tensor& shadow) {
    shadow.type = t.type;
    shadow.ne = t.ne;
    shadow.nb = t.nb;
    shadow.op = t.op;
    shadow.op_params = t.op_params;
    shadow.view_offs = t.view_offs;
    shadow.flags = t.flags;
    shadow.name = t.name;
}

}  // namespace

Result<std::shared_ptr<HostMirror>> HostMirror::build(const Graph& graph, const SimDevice& device) {
    std::shared_ptr<HostMirror> mirror(new HostMirror(device));
    for (int i = 0; i < graph.n_nodes(); ++i) XB_RETURN_IF_ERROR(mirror->add_node(*graph.node(i), i));
    return mirror;
}

Result<Tensor*> HostMirror::shadow_of(const Tensor& t) {
    if (auto it = shadow_by_tensor_.find(&t); it != shadow_by_tensor_.end()) return it->second;
    XB_ASSIGN_OR_RETURN(void* data, translate(t, *device_));
    Tensor& shadow = shadows_.emplace_back();
    copy_metadata(t, shadow);
    shadow.data = data;
    shadow_by_tensor_.emplace(&t, &shadow);
    return &shadow;
}

// Sources are linked only for nodes: the kernels read a node's direct sources and nothing further,
// and a source computed by an earlier split may be elsewhere entirely. Nodes that compute nothing
// (views) are left out: a split may hold a view of another backend's memory that none of its
// nodes reads (the scheduler points readers at a copy), and a view that is read gets its shadow
// as that reader's source.
Status HostMirror::add_node(const Tensor& node, int index) {
    const bool computes = !host::computes_nothing(node);
    if (!computes) return Status::ok();
    if (node.data == nullptr) {
        return Status(StatusCode::InvalidArgument, std::string(device_->name()) + ": node '" + node.display_name() +
                                                       "' (" + node.op_label() + ") is not allocated");
    }
    XB_ASSIGN_OR_RETURN(Tensor * shadow, shadow_of(node));
    for (size_t i = 0; i < node.src.size(); ++i) {
        const Tensor* src = node.src[i];
        if (src == nullptr) continue;
        if (src->data == nullptr) {
            return Status(StatusCode::InvalidArgument, std::string(device_->name()) + ": source '" +
                                                           src->display_name() + "' of node '" + node.display_name() +
                                                           "' is not allocated");
        }
        XB_ASSIGN_OR_RETURN(shadow->src[i], shadow_of(*src));
    }
    graph_.add_node(shadow);
    original_index_.push_back(index);
    return Status::ok();
}

}  // namespace xb::sim
