#include "sim/sim_mirror.hpp"

#include <algorithm>
#include <string>

#include "backend/row_split_buffer.hpp"
#include "backend/tensor_io.hpp"
#include "cpu_kernels/graph_executor.hpp"
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

// The host storage behind a row slice on any simulated device: every simulated device's memory is
// host memory here, so the device that owns the slice "computes" it by this process reading it.
Result<void*> translate_slice(const Tensor& slice) {
    const SimBuffer* buffer = sim_storage(slice);
    if (buffer == nullptr || !buffer->contains(slice.data, slice.nbytes())) {
        return Status(StatusCode::InvalidArgument, "row slice '" + slice.display_name() + "' is in " + memory_of(slice) +
                                                       ", not a simulated device's");
    }
    return static_cast<void*>(buffer->host_address(slice.data));
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

namespace {

// The length of the node sequence that `graph` repeats (Graph::repeated, op-check's perf mode), or
// its length when it is no repetition.
int repetition_period(const Graph& graph) {
    const int n = graph.n_nodes();
    int period = n;
    for (int i = 1; i < n; ++i) {
        if (graph.node(i) == graph.node(0)) {
            period = i;
            break;
        }
    }
    if (period == n || n % period != 0) return n;
    for (int i = period; i < n; ++i) {
        if (graph.node(i) != graph.node(i % period)) return n;
    }
    return period;
}

}  // namespace

Result<std::shared_ptr<HostMirror>> HostMirror::build(const Graph& graph, const SimDevice& device) {
    std::shared_ptr<HostMirror> mirror(new HostMirror(device));
    // A repeated graph computes its nodes again each time: the shadow graph (whose nodes, as any
    // graph's, are distinct) is mirrored once and repeated.
    const int period = repetition_period(graph);
    for (int i = 0; i < period; ++i) XB_RETURN_IF_ERROR(mirror->add_node(*graph.node(i), i));
    if (const int times = graph.n_nodes() / std::max(period, 1); times > 1) {
        mirror->graph_ = mirror->graph_.repeated(times);
        const std::vector<int> once = mirror->original_index_;
        for (int t = 1; t < times; ++t) {
            for (const int index : once) mirror->original_index_.push_back(index < 0 ? index : index + t * period);
        }
    }
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
    const bool computes = !computes_nothing(node);
    if (!computes) return Status::ok();
    if (node.data == nullptr) {
        return Status(StatusCode::InvalidArgument, std::string(device_->name()) + ": node '" + node.display_name() +
                                                       "' (" + node.op_label() + ") is not allocated");
    }
    if (node.op == Op::MulMat && node.src[0] != nullptr && row_split_storage(*node.src[0]) != nullptr) {
        return add_row_split_product(node, index);
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

Status HostMirror::add_row_split_product(const Tensor& node, int index) {
    const Tensor& weight = *node.src[0];
    const auto* slices = row_split_storage(weight)->slices(weight);
    if (slices == nullptr || node.src[1] == nullptr || node.type != DType::F32 || !node.is_contiguous()) {
        return Status(StatusCode::InvalidArgument, std::string(device_->name()) + ": '" + node.display_name() +
                                                       "' multiplies the row-split weight '" + weight.display_name() +
                                                       "' but is not a contiguous f32 product of an initialised weight");
    }
    XB_ASSIGN_OR_RETURN(Tensor * out, shadow_of(node));
    XB_ASSIGN_OR_RETURN(Tensor * x, shadow_of(*node.src[1]));
    for (const auto& slice : *slices) {
        XB_ASSIGN_OR_RETURN(void* rows, translate_slice(slice->tensor));
        Tensor& w = shadows_.emplace_back();
        copy_metadata(slice->tensor, w);
        w.data = rows;
        // The slice's product: the node's rows [row_begin, row_end), computed on the slice's device...
        Tensor& part = shadows_.emplace_back();
        describe_slice_product(node, *slice, w, *x, part);
        const AlignedBytes& scratch = scratch_.emplace_back(part.nbytes(), size_t{64});
        if (scratch.data() == nullptr && part.nbytes() > 0) {
            return Status(StatusCode::OutOfMemory, std::string(device_->name()) + ": no host memory for the rows of '" +
                                                       part.name + "'");
        }
        part.data = scratch.data();
        // ...and gathered into them on this one.
        Tensor& gather = shadows_.emplace_back();
        gather.type = DType::F32;
        gather.ne = part.ne;
        gather.nb = out->nb;
        gather.op = Op::Cpy;
        gather.src[0] = &part;
        gather.name = node.name;
        gather.data = static_cast<std::byte*>(out->data) + static_cast<size_t>(slice->row_begin) * out->nb[0];
        graph_.add_node(&part);
        original_index_.push_back(-1);
        graph_.add_node(&gather);
        original_index_.push_back(index);
        if (&sim_storage(slice->tensor)->sim_device() != device_) {
            const SliceTransfer t = slice_transfer(node, *slice);
            peer_bytes_.push_back(t.to_slice);    // the activations, sent to the slice's device
            peer_bytes_.push_back(t.from_slice);  // its rows of the result, sent back
        }
    }
    return Status::ok();
}

}  // namespace xb::sim
