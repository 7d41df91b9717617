#include "sim/sim_backend.hpp"

#include <cstring>
#include <string>

#include "backend/tensor_io.hpp"
#include "sim/sim_buffer.hpp"
#include "sim/sim_fault.hpp"
#include "sim/sim_fence.hpp"
#include "sim/sim_mirror.hpp"

namespace xb::sim {

namespace {

class SimGraphPlan final : public GraphPlan {
public:
    SimGraphPlan(const SimBackend& owner, std::shared_ptr<const HostMirror> mirror)
        : owner(&owner), mirror(std::move(mirror)) {}
    const SimBackend* owner;
    std::shared_ptr<const HostMirror> mirror;
};

}  // namespace

SimBackend::SimBackend(SimDevice& device, SimSettings settings)
    : Backend(device), sim_device_(&device), settings_(std::move(settings)), executor_(settings_.threads) {}

void SimBackend::record_copy(CopyKind kind, size_t bytes, bool pinned) {
    const LinkModel link = settings_.link_for(kind, pinned);
    copies_.record(kind, bytes, link, pinned);
    sim_device_->record_copy(kind, bytes, link, pinned);
}

namespace {

// The other backend is a stream of another simulated device: copies with it use the peer link.
bool across_devices(const Backend& other, const SimDevice& self) {
    const auto* peer = dynamic_cast<const SimBackend*>(&other);
    return peer != nullptr && &peer->sim_device() != &self;
}

}  // namespace

double SimBackend::modelled_copy_seconds(const Tensor& src, const Tensor& dst, const Backend& other) const {
    const size_t bytes = src.nbytes();
    if (across_devices(other, *sim_device_)) return settings_.peer_link.seconds(bytes);
    const bool src_here = sim_storage(src) != nullptr;
    const bool dst_here = sim_storage(dst) != nullptr;
    if (src_here && dst_here) return settings_.link_for(CopyKind::DeviceToDevice, false).seconds(bytes);
    const Tensor& host = src_here ? dst : src;
    const CopyKind kind = src_here ? CopyKind::DeviceToHost : CopyKind::HostToDevice;
    return settings_.link_for(kind, sim_device_->is_pinned(host.data, bytes)).seconds(bytes);
}

double SimBackend::link_gbps(const Backend& other) const {
    return across_devices(other, *sim_device_) ? settings_.peer_link.bandwidth_gbps : settings_.link.bandwidth_gbps;
}

void SimBackend::enqueue_copy(void* to, const void* from, size_t bytes, CopyKind kind) {
    // Whether the host side is pinned is read now, while the caller guarantees its memory is live.
    const void* host = kind == CopyKind::HostToDevice ? from : to;
    const bool pinned = (kind == CopyKind::HostToDevice || kind == CopyKind::DeviceToHost) &&
                        sim_device_->is_pinned(host, bytes);
    stream_.enqueue([this, to, from, bytes, kind, pinned] {
        XB_RETURN_IF_ERROR(sim_device_->copy_fails(bytes));
        std::memmove(to, from, bytes);
        record_copy(kind, bytes, pinned);
        return Status::ok();
    });
}

// A tensor of another device has no place on this stream: do what a synchronous backend does,
// after the work queued so far.
Status SimBackend::set_tensor_async(Tensor& t, const void* data, size_t offset, size_t size) {
    SimBuffer* buffer = sim_storage(t);
    if (buffer == nullptr || &buffer->sim_device() != sim_device_) {
        synchronize();
        return storage_buffer(t)->set_tensor(t, data, offset, size);
    }
    enqueue_copy(buffer->host_address(t.data) + offset, data, size, CopyKind::HostToDevice);
    return Status::ok();
}

Status SimBackend::get_tensor_async(const Tensor& t, void* data, size_t offset, size_t size) {
    SimBuffer* buffer = sim_storage(t);
    if (buffer == nullptr || &buffer->sim_device() != sim_device_) {
        synchronize();
        return storage_buffer(t)->get_tensor(t, data, offset, size);
    }
    enqueue_copy(data, buffer->host_address(t.data) + offset, size, CopyKind::DeviceToHost);
    return Status::ok();
}

bool SimBackend::cpy_tensor_async(Backend& src_backend, const Tensor& src, Tensor& dst) {
    const size_t bytes = src.nbytes();
    SimBuffer* to = sim_storage(dst);
    if (to == nullptr || &to->sim_device() != sim_device_ || !to->contains(dst.data, bytes) || src.data == nullptr) {
        return false;  // the synchronous fallback reports unallocated tensors
    }
    std::byte* dst_host = to->host_address(dst.data);
    const Buffer* from_buffer = storage_buffer(src);
    if (from_buffer != nullptr && from_buffer->is_host()) {
        src_backend.synchronize();  // host data made by an asynchronous host backend must be complete
        enqueue_copy(dst_host, src.data, bytes, CopyKind::HostToDevice);
        return true;
    }
    const SimBuffer* from = sim_storage(src);
    if (from == nullptr || !from->contains(src.data, bytes)) return false;
    const std::byte* src_host = from->host_address(src.data);
    const CopyKind kind = &from->sim_device() == sim_device_ ? CopyKind::DeviceToDevice : CopyKind::Peer;
    auto* src_stream = dynamic_cast<SimBackend*>(&src_backend);
    if (src_stream == nullptr || src_stream == this) {
        enqueue_copy(dst_host, src_host, bytes, kind);
        return true;
    }
    // On the source stream the copy follows the work that makes src and precedes any later
    // overwrite of it; this stream waits for the copy before its next work.
    auto fence = std::make_shared<Fence>();
    const uint64_t mark = fence->mark();
    src_stream->stream().enqueue([this, fence, mark, dst_host, src_host, bytes, kind] {
        // A failed copy still releases the waiting stream; the error surfaces on the source stream.
        const Status copied = sim_device_->copy_fails(bytes);
        if (copied.is_ok()) {
            std::memmove(dst_host, src_host, bytes);
            record_copy(kind, bytes, false);
        }
        fence->signal(mark);
        return copied;
    });
    stream_.enqueue([fence, mark] {
        fence->wait(mark);
        return Status::ok();
    });
    return true;
}

void SimBackend::synchronize() { stream_.synchronize(); }

Status SimBackend::take_async_error() { return stream_.take_error(); }

Status SimBackend::check_supported(const Graph& graph) const {
    for (const Tensor* node : graph.nodes()) {
        if (!sim_device_->supports_op(*node)) {
            return Status(StatusCode::NotSupported, std::string(name()) + ": node '" + node->display_name() + "' (" +
                                                        node->op_label() + ") is not supported (settings: " +
                                                        sim_device_->settings() + ")");
        }
    }
    return Status::ok();
}

Status SimBackend::compute(const HostMirror& mirror) {
    cpu_kernels::ExecutorHooks hooks;
    if (!settings_.fault.empty()) {
        hooks.after_node = [this, &mirror](int index, Tensor& node) {
            if (settings_.fault.matches(mirror.original_index(index), node)) perturb_output(node, settings_.fault_size);
        };
    }
    Status status = executor_.compute(mirror.graph(), hooks);
    if (status.is_ok()) {
        for (const size_t bytes : mirror.peer_bytes()) record_copy(CopyKind::Peer, bytes, false);
        return status;
    }
    return Status(status.code(), std::string(name()) + ": " + status.message());
}

void SimBackend::enqueue_compute(std::shared_ptr<const HostMirror> mirror) {
    stream_.enqueue([this, mirror = std::move(mirror)] { return compute(*mirror); });
}

Status SimBackend::graph_compute_async(const Graph& graph) {
    XB_RETURN_IF_ERROR(check_supported(graph));
    XB_ASSIGN_OR_RETURN(std::shared_ptr<const HostMirror> mirror, HostMirror::build(graph, *sim_device_));
    if (mirror->graph().n_nodes() > 0) enqueue_compute(std::move(mirror));
    return Status::ok();
}

Result<std::unique_ptr<GraphPlan>> SimBackend::graph_plan_create(const Graph& graph) {
    XB_RETURN_IF_ERROR(check_supported(graph));
    XB_ASSIGN_OR_RETURN(std::shared_ptr<const HostMirror> mirror, HostMirror::build(graph, *sim_device_));
    return std::unique_ptr<GraphPlan>(std::make_unique<SimGraphPlan>(*this, std::move(mirror)));
}

Status SimBackend::graph_plan_compute(GraphPlan& plan) {
    auto* sim_plan = dynamic_cast<SimGraphPlan*>(&plan);
    if (sim_plan == nullptr || sim_plan->owner != this) {
        return Status(StatusCode::InvalidArgument, std::string(name()) + ": the plan was made by another backend");
    }
    enqueue_compute(sim_plan->mirror);
    synchronize();
    return take_async_error();
}

bool SimBackend::set_n_threads(int n_threads) {
    if (n_threads < 1) return false;
    stream_.enqueue([this, n_threads] {
        executor_.set_n_threads(n_threads);
        return Status::ok();
    });
    return true;
}

}  // namespace xb::sim
