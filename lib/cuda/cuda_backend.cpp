#include "cuda/cuda_backend.hpp"

#include <algorithm>
#include <bit>
#include <string>
#include <utility>

#include "backend/tensor_io.hpp"
#include "cuda/cuda_check.hpp"
#include "cuda/cuda_support.hpp"
#include "cuda/kernels.hpp"

namespace xb::cuda {

namespace {

std::string describe_node(int index, const Tensor& node) {
    return "node " + std::to_string(index) + " '" + node.display_name() + "' (" + node.op_label() + ")";
}

// Names a kernel that checks indices, for the message of an out-of-range index it finds.
std::string checked_kernel_label(const Tensor& node) {
    return node.op_label() + " of node '" + node.display_name() + "'";
}

}  // namespace

Result<std::unique_ptr<CudaBackend>> CudaBackend::create(CudaDevice& device, CudaSettings settings) {
    const int id = device.id();
    auto fail = [&device](const Status& s) {
        return Status(s.code(), std::string(device.name()) + ": cannot create a backend: " + s.message());
    };
    auto stream = create_stream(id);
    if (!stream.is_ok()) return fail(stream.status());
    auto event = create_event(id);
    if (!event.is_ok()) return fail(event.status());
    auto cublas = create_cublas(id, stream->get());
    if (!cublas.is_ok()) return fail(cublas.status());
    auto errors = KernelErrorChannel::create(id, stream->get());
    if (!errors.is_ok()) return fail(errors.status());
    return std::unique_ptr<CudaBackend>(new CudaBackend(device, settings, std::move(stream).value(),
                                                        std::move(event).value(), std::move(cublas).value(),
                                                        std::move(errors).value()));
}

CudaBackend::CudaBackend(CudaDevice& device, CudaSettings settings, StreamPtr stream, EventPtr copy_event,
                         CublasPtr cublas, KernelErrorChannel kernel_errors)
    : Backend(device),
      device_(&device),
      settings_(settings),
      stream_(std::move(stream)),
      copy_event_(std::move(copy_event)),
      cublas_(std::move(cublas)),
      kernel_errors_(std::move(kernel_errors)),
      row_split_(device),
      graph_replay_(settings.graphs) {}

CudaBackend::~CudaBackend() {
    // Errors can no longer be reported to anyone; the wait itself is what matters.
    if (use_device(device_->id()).is_ok()) static_cast<void>(XB_CUDA_STATUS(cudaStreamSynchronize(stream_.get())));
}

void CudaBackend::keep(Status error) {
    if (!error.is_ok() && async_error_.is_ok()) async_error_ = std::move(error);
}

// --- transfers -----------------------------------------------------------------------------------

Status CudaBackend::set_tensor_async(Tensor& t, const void* data, size_t offset, size_t size) {
    const CudaBuffer* buffer = cuda_storage(t);
    if (buffer == nullptr || buffer->device_id() != device_->id()) {
        // Not this GPU's memory: no place on this stream. Synchronously, after the queued work.
        synchronize();
        return storage_buffer(t)->set_tensor(t, data, offset, size);
    }
    XB_RETURN_IF_ERROR(use_device(device_->id()));
    XB_CUDA_RETURN_IF_ERROR(cudaMemcpyAsync(static_cast<char*>(t.data) + offset, data, size, cudaMemcpyDefault,
                                            stream_.get()));
    return Status::ok();
}

Status CudaBackend::get_tensor_async(const Tensor& t, void* data, size_t offset, size_t size) {
    const CudaBuffer* buffer = cuda_storage(t);
    if (buffer == nullptr || buffer->device_id() != device_->id()) {
        synchronize();
        return storage_buffer(t)->get_tensor(t, data, offset, size);
    }
    XB_RETURN_IF_ERROR(use_device(device_->id()));
    XB_CUDA_RETURN_IF_ERROR(cudaMemcpyAsync(data, static_cast<const char*>(t.data) + offset, size, cudaMemcpyDefault,
                                            stream_.get()));
    return Status::ok();
}

bool CudaBackend::upload_pinned_weights(Backend& src_backend, const Tensor& src, Tensor& dst) {
    const CudaHostBuffer* from = cuda_host_storage(src);
    if (from == nullptr || from->usage() != BufferUsage::Weights) return false;
    const size_t bytes = src.nbytes();
    if (bytes == 0) return true;
    src_backend.synchronize();  // whatever src's backend still has queued is done before the upload reads src
    Status s = use_device(device_->id());
    if (s.is_ok()) {
        s = XB_CUDA_STATUS(cudaMemcpyAsync(dst.data, src.data, bytes, cudaMemcpyHostToDevice, stream_.get()));
    }
    keep(std::move(s));
    return true;
}

bool CudaBackend::cpy_tensor_async(Backend& src_backend, const Tensor& src, Tensor& dst) {
    const CudaBuffer* to = cuda_storage(dst);
    if (to != nullptr && to->device_id() == device_->id() && src.data != nullptr && dst.data != nullptr &&
        upload_pinned_weights(src_backend, src, dst)) {
        return true;
    }
    const CudaBuffer* from = cuda_storage(src);
    auto* from_backend = dynamic_cast<CudaBackend*>(&src_backend);
    if (to == nullptr || to->device_id() != device_->id() || from == nullptr || from_backend == nullptr ||
        from->device_id() != from_backend->device_->id() || src.data == nullptr || dst.data == nullptr) {
        return false;  // the synchronous fallback handles (and reports) everything else
    }
    const size_t bytes = src.nbytes();
    if (bytes == 0) return true;
    if (from_backend == this) {
        Status s = use_device(device_->id());
        if (s.is_ok()) {
            s = XB_CUDA_STATUS(cudaMemcpyAsync(dst.data, src.data, bytes, cudaMemcpyDeviceToDevice, stream_.get()));
        }
        keep(std::move(s));
        return true;
    }
    keep(copy_from_peer_stream(*from_backend, src, dst, bytes));
    return true;
}

Status CudaBackend::copy_from_peer_stream(CudaBackend& from, const Tensor& src, Tensor& dst, size_t bytes) {
    const int dst_device = device_->id();
    const int src_device = from.device_->id();
    // The copy waits for this stream's queued work (which may still read dst's old contents)...
    XB_RETURN_IF_ERROR(use_device(dst_device));
    XB_CUDA_RETURN_IF_ERROR(cudaEventRecord(copy_event_.get(), stream_.get()));
    XB_RETURN_IF_ERROR(use_device(src_device));
    XB_CUDA_RETURN_IF_ERROR(cudaStreamWaitEvent(from.stream(), copy_event_.get(), 0));
    // ...runs on the source stream, after the work that makes src and before any that reuses it...
    if (src_device == dst_device) {
        XB_CUDA_RETURN_IF_ERROR(cudaMemcpyAsync(dst.data, src.data, bytes, cudaMemcpyDeviceToDevice, from.stream()));
    } else {
        device_->enable_peer_access(src_device);
        from.device_->enable_peer_access(dst_device);
        XB_RETURN_IF_ERROR(use_device(src_device));
        XB_CUDA_RETURN_IF_ERROR(cudaMemcpyPeerAsync(dst.data, dst_device, src.data, src_device, bytes, from.stream()));
    }
    // ...and this stream's later work waits for it.
    XB_CUDA_RETURN_IF_ERROR(cudaEventRecord(from.copy_event_.get(), from.stream()));
    XB_RETURN_IF_ERROR(use_device(dst_device));
    XB_CUDA_RETURN_IF_ERROR(cudaStreamWaitEvent(stream_.get(), from.copy_event_.get(), 0));
    return Status::ok();
}

void CudaBackend::synchronize() {
    Status s = use_device(device_->id());
    if (s.is_ok()) s = XB_CUDA_STATUS(cudaStreamSynchronize(stream_.get()));
    if (s.is_ok()) s = kernel_errors_.collect(stream_.get(), device_->name());
    keep(std::move(s));
}

Status CudaBackend::take_async_error() {
    Status own = std::exchange(async_error_, Status::ok());
    Status device = device_->take_error();
    if (own.is_ok()) return device;
    device_->record_error(std::move(device));  // kept for the next call
    return own;
}

// --- graphs --------------------------------------------------------------------------------------

Status CudaBackend::check_reachable(const Tensor& node, const Tensor& t) const {
    if (t.is_empty()) return Status::ok();  // never read nor written
    const Buffer* storage = storage_buffer(t);
    if (storage == nullptr || t.data == nullptr) {
        return Status(StatusCode::InvalidArgument, std::string(name()) + ": '" + t.display_name() + "' (used by '" +
                                                       node.display_name() + "') is not allocated");
    }
    CudaBuffer* buffer = cuda_storage(t);
    if (buffer == nullptr || buffer->device_id() != device_->id()) {
        return Status(StatusCode::InvalidArgument,
                      std::string(name()) + ": '" + t.display_name() + "' (used by '" + node.display_name() +
                          "') is in a " + storage->name() + " buffer; " + name() + " computes on its own memory only");
    }
    const auto* base = static_cast<const char*>(buffer->base());
    const auto* data = static_cast<const char*>(t.data);
    if (data < base || static_cast<size_t>(data - base) > buffer->size() ||
        t.nbytes() > buffer->size() - static_cast<size_t>(data - base)) {
        return Status(StatusCode::InvalidArgument, std::string(name()) + ": '" + t.display_name() +
                                                       "' reaches outside its buffer");
    }
    return Status::ok();
}

Status CudaBackend::check_graph(const Graph& graph) const {
    for (int i = 0; i < graph.n_nodes(); ++i) {
        const Tensor& node = *graph.nodes()[static_cast<size_t>(i)];
        if (computes_nothing(node)) continue;
        if (!supports_node(node)) {
            return Status(StatusCode::NotSupported, std::string(name()) + ": " + describe_node(i, node) + " " +
                                                        node.shape_string() + " is not supported");
        }
        XB_RETURN_IF_ERROR(check_reachable(node, node));
        const bool rows = RowSplitProducts::applies(node);
        if (rows) {
            if (Status s = RowSplitProducts::check(node); !s.is_ok()) {
                return Status(s.code(), std::string(name()) + ": " + describe_node(i, node) + ": " + s.message());
            }
        }
        for (size_t j = rows ? 1 : 0; j < node.src.size(); ++j) {  // a row-split weight lives in its slices
            if (node.src[j] != nullptr) XB_RETURN_IF_ERROR(check_reachable(node, *node.src[j]));
        }
    }
    return Status::ok();
}

Status CudaBackend::launch_nodes(const Graph& graph, LaunchContext ctx) {
    for (int i = 0; i < graph.n_nodes(); ++i) {
        const Tensor& node = *graph.nodes()[static_cast<size_t>(i)];
        if (computes_nothing(node)) continue;
        if (node.op == Op::GetRows || node.op == Op::SetRows || node.op == Op::MulMatId || node.op == Op::AddId) {
            ctx.error_slot = kernel_errors_.add_slot(checked_kernel_label(node));
        }
        const Status s = RowSplitProducts::applies(node) ? row_split_.launch(ctx, node) : launch_node(ctx, node);
        if (!s.is_ok()) {
            return Status(s.code(), std::string(name()) + ": " + describe_node(i, node) + ": " + s.message());
        }
    }
    return Status::ok();
}

GraphKey CudaBackend::replay_key(const Graph& graph, const LaunchContext& ctx) const {
    GraphKey key;
    if (!graph_replay_.enabled()) return key;
    for (const Tensor* node : graph.nodes()) {
        if (RowSplitProducts::applies(*node)) return GraphKey{};
    }
    constexpr size_t kWordsPerNode = 64;  // a node and three sources
    key.reserve(static_cast<size_t>(graph.n_nodes()) * kWordsPerNode);
    key.add_word(std::bit_cast<uintptr_t>(ctx.scratch));
    key.add_word(ctx.scratch_bytes);
    key.add_word(kernel_errors_.slots());  // the slots the checking kernels write
    for (const Tensor* node : graph.nodes()) {
        if (!computes_nothing(*node)) key.add_node(*node);
    }
    return key;
}

Status CudaBackend::capture_and_launch(const Graph& graph, const LaunchContext& ctx, int place) {
    const size_t first_slot = kernel_errors_.slots();
    CapturedGraph& held = captured_.at(static_cast<size_t>(place));
    auto captured = capture_launches(stream_.get(), [&] { return launch_nodes(graph, ctx); });
    if (captured.is_ok() && held.exec.set(*captured).is_ok() && held.exec.launch(stream_.get()).is_ok()) {
        graph_replay_.captured(place);
        held.error_labels = kernel_errors_.labels_from(first_slot);
        return Status::ok();
    }
    // Nothing of the capture ran: the same launches, one by one.
    graph_replay_.capture_failed(place);
    kernel_errors_.truncate(first_slot);
    return launch_nodes(graph, ctx);
}

Status CudaBackend::replay(const Graph& graph, const LaunchContext& ctx, int place) {
    const CapturedGraph& held = captured_.at(static_cast<size_t>(place));
    const size_t first_slot = kernel_errors_.slots();
    kernel_errors_.add_slots(held.error_labels);
    if (held.exec.launch(stream_.get()).is_ok()) return Status::ok();
    // Nothing was queued: the same launches one by one, and this graph is not replayed again.
    graph_replay_.capture_failed(place);
    kernel_errors_.truncate(first_slot);
    return launch_nodes(graph, ctx);
}

Status CudaBackend::graph_compute_async(const Graph& graph) {
    XB_RETURN_IF_ERROR(use_device(device_->id()));
    XB_RETURN_IF_ERROR(check_graph(graph));
    size_t scratch = 0;
    for (const Tensor* node : graph.nodes()) scratch = std::max(scratch, node_scratch_bytes(*node));
    if (Status s = scratch_.reserve(device_->id(), scratch, stream_.get()); !s.is_ok()) {
        return Status(s.code(), std::string(name()) + ": " + s.message());
    }
    LaunchContext ctx;
    ctx.stream = stream_.get();
    ctx.cublas = cublas_.get();
    ctx.scratch = scratch_.data();
    ctx.scratch_bytes = scratch_.size();
    ctx.errors = kernel_errors_.record();
    ctx.tf32 = settings_.tf32;
    const GraphDecision decision = graph_replay_.decide(replay_key(graph, ctx));
    switch (decision.launch) {
        case GraphLaunch::Replay:
            return replay(graph, ctx, decision.place);
        case GraphLaunch::Capture:
            return capture_and_launch(graph, ctx, decision.place);
        case GraphLaunch::Nodes:
            break;
    }
    return launch_nodes(graph, ctx);
}

}  // namespace xb::cuda
