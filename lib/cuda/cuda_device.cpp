#include "cuda/cuda_device.hpp"

#include <algorithm>
#include <cstring>
#include <utility>

#include "backend/row_split_buffer.hpp"
#include "cuda/cuda_backend.hpp"
#include "cuda/cuda_check.hpp"
#include "cuda/cuda_event.hpp"
#include "cuda/cuda_handles.hpp"
#include "cuda/cuda_support.hpp"

namespace xb::cuda {

namespace {

// GB/s of an upload from pinned host memory to `device`: the best of three timed copies of 64 MiB
// after a warm-up, on a stream of its own (what the link carries, for reports to compare with).
Result<double> measure_pinned_upload_gbps(int device) {
    constexpr size_t kBytes = size_t{64} << 20;
    XB_ASSIGN_OR_RETURN(PinnedHostMemory host, PinnedHostMemory::allocate(kBytes));
    XB_ASSIGN_OR_RETURN(DeviceMemory memory, DeviceMemory::allocate(device, kBytes));
    XB_ASSIGN_OR_RETURN(StreamPtr stream, create_stream(device));
    std::memset(host.get(), 1, kBytes);
    cudaEvent_t start_event = nullptr;
    cudaEvent_t stop_event = nullptr;
    XB_CUDA_RETURN_IF_ERROR(cudaEventCreate(&start_event));
    const EventPtr start(start_event);
    XB_CUDA_RETURN_IF_ERROR(cudaEventCreate(&stop_event));
    const EventPtr stop(stop_event);
    float best_ms = 0;
    for (int i = 0; i < 4; ++i) {  // the first is a warm-up
        XB_CUDA_RETURN_IF_ERROR(cudaEventRecord(start.get(), stream.get()));
        XB_CUDA_RETURN_IF_ERROR(cudaMemcpyAsync(memory.get(), host.get(), kBytes, cudaMemcpyHostToDevice, stream.get()));
        XB_CUDA_RETURN_IF_ERROR(cudaEventRecord(stop.get(), stream.get()));
        XB_CUDA_RETURN_IF_ERROR(cudaEventSynchronize(stop.get()));
        float ms = 0;
        XB_CUDA_RETURN_IF_ERROR(cudaEventElapsedTime(&ms, start.get(), stop.get()));
        if (i > 0 && ms > 0 && (best_ms == 0 || ms < best_ms)) best_ms = ms;
    }
    if (best_ms <= 0) return Status(StatusCode::Internal, "the timed copies took no measurable time");
    return static_cast<double>(kBytes) / (static_cast<double>(best_ms) * 1e-3) * 1e-9;
}

}  // namespace

Result<CudaDeviceInfo> query_device_info(int id) {
    cudaDeviceProp prop{};
    XB_CUDA_RETURN_IF_ERROR(cudaGetDeviceProperties(&prop, id));
    int host_register = 0;
    XB_CUDA_RETURN_IF_ERROR(cudaDeviceGetAttribute(&host_register, cudaDevAttrHostRegisterSupported, id));
    CudaDeviceInfo info;
    info.model = std::string(prop.name, strnlen(prop.name, sizeof prop.name));
    info.major = prop.major;
    info.minor = prop.minor;
    info.multiprocessors = prop.multiProcessorCount;
    info.total_memory = prop.totalGlobalMem;
    info.host_register = host_register != 0;
    return info;
}

CudaDevice::CudaDevice(BackendReg& reg, int id, CudaDeviceInfo info)
    : Device(reg),
      id_(id),
      name_("CUDA" + std::to_string(id)),
      info_(std::move(info)),
      buffer_type_(*this),
      host_buffer_type_(*this),
      registered_buffer_type_(*this) {}

std::string CudaDevice::description() const {
    return info_.model + " (compute " + std::to_string(info_.major) + "." + std::to_string(info_.minor) + ", " +
           std::to_string(info_.multiprocessors) + " SMs)";
}

MemoryInfo CudaDevice::memory() const {
    size_t free = 0;
    size_t total = 0;
    if (use_device(id_).is_ok() && XB_CUDA_STATUS(cudaMemGetInfo(&free, &total)).is_ok()) return {free, total};
    return {0, info_.total_memory};
}

DeviceCaps CudaDevice::caps() const {
    DeviceCaps c;
    c.async = true;
    c.host_buffer = true;
    c.buffer_from_host_ptr = info_.host_register;
    c.events = true;
    return c;
}

Status CudaDevice::configure(std::string_view params) {
    XB_ASSIGN_OR_RETURN(CudaSettingsUpdate update, parse_cuda_params(params, name_));
    std::lock_guard<std::mutex> lock(mutex_);
    update.apply_to(settings_);
    return Status::ok();
}

std::string CudaDevice::settings() const { return format_cuda_settings(current_settings()); }

CudaSettings CudaDevice::current_settings() const {
    std::lock_guard<std::mutex> lock(mutex_);
    return settings_;
}

Result<std::unique_ptr<Backend>> CudaDevice::init_backend(std::string_view params) {
    XB_ASSIGN_OR_RETURN(CudaSettingsUpdate update, parse_cuda_params(params, name_));
    CudaSettings backend_settings;
    {
        std::lock_guard<std::mutex> lock(mutex_);
        if (update.offload_min_batch) settings_.offload_min_batch = *update.offload_min_batch;
        backend_settings = settings_;
    }
    update.apply_to(backend_settings);
    XB_ASSIGN_OR_RETURN(std::unique_ptr<CudaBackend> backend, CudaBackend::create(*this, backend_settings));
    return std::unique_ptr<Backend>(std::move(backend));
}

Result<std::unique_ptr<Buffer>> CudaDevice::buffer_from_host_ptr(void* ptr, size_t size, size_t max_tensor_size) {
    static_cast<void>(max_tensor_size);  // one registration covers the whole range
    if (!info_.host_register) {
        return Status(StatusCode::NotSupported, name_ + ": this system cannot pin (register) host memory");
    }
    if (ptr == nullptr && size > 0) {
        return Status(StatusCode::InvalidArgument, name_ + ": buffer_from_host_ptr needs a non-null pointer");
    }
    const size_t align = registered_buffer_type_.alignment();
    if (reinterpret_cast<uintptr_t>(ptr) % align != 0) {
        return Status(StatusCode::InvalidArgument,
                      name_ + ": host pointer must be " + std::to_string(align) + "-byte aligned");
    }
    XB_ASSIGN_OR_RETURN(PinnedHostMemory pinned, PinnedHostMemory::register_range(ptr, size));
    return std::unique_ptr<Buffer>(std::make_unique<CudaHostBuffer>(registered_buffer_type_, std::move(pinned)));
}

std::optional<double> CudaDevice::host_link_gbps() {
    std::lock_guard<std::mutex> lock(link_mutex_);
    if (!link_probed_) {
        link_probed_ = true;
        Result<double> gbps = measure_pinned_upload_gbps(id_);
        if (gbps.is_ok()) link_gbps_ = *gbps;  // a failed probe only leaves the figure unknown
    }
    return link_gbps_;
}

bool CudaDevice::supports_op(const Tensor& op) const { return supports_node(op); }

bool CudaDevice::offload_op(const Tensor& op) const {
    if (op.op == Op::GetRows) return false;
    return offload_batch(op) >= current_settings().offload_min_batch;
}

Result<std::unique_ptr<Event>> CudaDevice::event_new() {
    XB_ASSIGN_OR_RETURN(std::unique_ptr<CudaEvent> event, CudaEvent::create(*this));
    return std::unique_ptr<Event>(std::move(event));
}

void CudaDevice::record_error(Status error) {
    if (error.is_ok()) return;
    std::lock_guard<std::mutex> lock(mutex_);
    if (error_.is_ok()) error_ = std::move(error);
}

Status CudaDevice::take_error() {
    std::lock_guard<std::mutex> lock(mutex_);
    return std::exchange(error_, Status::ok());
}

bool CudaDevice::supports_buft(const BufferType& buft) const {
    if (&buft == &buffer_type_) return true;
    const auto* rows = dynamic_cast<const RowSplitBufferType*>(&buft);
    if (rows == nullptr || &rows->device() != this) return false;
    return std::all_of(rows->devices().begin(), rows->devices().end(),
                       [](const Device* d) { return dynamic_cast<const CudaDevice*>(d) != nullptr; });
}

void CudaDevice::enable_peer_access(int peer) {
    if (peer == id_) return;
    {
        std::lock_guard<std::mutex> lock(mutex_);
        if (!peers_.insert(peer).second) return;  // tried before
    }
    int can_access = 0;
    if (!XB_CUDA_STATUS(cudaDeviceCanAccessPeer(&can_access, id_, peer)).is_ok() || can_access == 0) return;
    if (!use_device(id_).is_ok()) return;
    const cudaError_t error = cudaDeviceEnablePeerAccess(peer, 0);
    // cudaErrorPeerAccessAlreadyEnabled is what we want; any other failure leaves copies staged.
    // Either way the error must not linger in the last-error slot for a later launch check.
    if (error != cudaSuccess) static_cast<void>(cudaGetLastError());
}

}  // namespace xb::cuda
