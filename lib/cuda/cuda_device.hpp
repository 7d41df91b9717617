// CudaDevice: one GPU ("CUDA0", ...). It makes backends (one stream each, cuda_backend.hpp),
// device buffers and pinned host buffers (cuda_buffer.hpp) and events (cuda_event.hpp); it answers
// supports_op from what the kernels compute (cuda_support.hpp) and offload_op from its batch
// threshold (cuda_settings.hpp). Thread-safe: settings and recorded errors are guarded.
#pragma once

#include <cstddef>
#include <memory>
#include <mutex>
#include <optional>
#include <set>
#include <string>

#include "backend/device.hpp"
#include "backend/registry.hpp"
#include "cuda/cuda_buffer.hpp"
#include "cuda/cuda_settings.hpp"

namespace xb::cuda {

// What cudaGetDeviceProperties says about a GPU.
struct CudaDeviceInfo {
    std::string model;  // "NVIDIA H100 80GB HBM3"
    int major = 0;      // compute capability
    int minor = 0;
    int multiprocessors = 0;
    size_t total_memory = 0;
    bool host_register = false;  // cudaHostRegister works (buffer_from_host_ptr)
};

// The properties of GPU `id`; the CUDA error as a Status when they cannot be read.
Result<CudaDeviceInfo> query_device_info(int id);

class CudaDevice final : public Device {
public:
    CudaDevice(BackendReg& reg, int id, CudaDeviceInfo info);

    const char* name() const override { return name_.c_str(); }
    // "NVIDIA H100 80GB HBM3 (compute 9.0, 132 SMs)"
    std::string description() const override;
    // cudaMemGetInfo; when it fails, no free memory out of the total from the properties.
    MemoryInfo memory() const override;
    DeviceType type() const override { return DeviceType::GPU; }
    DeviceCaps caps() const override;

    Status configure(std::string_view params) override;
    std::string settings() const override;
    // `params`: the keys of cuda_settings.hpp; offload_min_batch changes the device (offload_op is
    // a device query), tf32 only this backend.
    Result<std::unique_ptr<Backend>> init_backend(std::string_view params) override;

    BufferType& buffer_type() override { return buffer_type_; }
    BufferType* host_buffer_type() override { return &host_buffer_type_; }
    // Measured on the first call (a 64 MiB upload from pinned memory, the best of three after a
    // warm-up, on a stream of its own) and kept; nullopt when the probe cannot run (no memory).
    std::optional<double> host_link_gbps() override;
    // Pins the caller's memory (cudaHostRegister): a host buffer the CPU computes in and copies
    // reach at full speed. NotSupported where the system cannot register host memory.
    Result<std::unique_ptr<Buffer>> buffer_from_host_ptr(void* ptr, size_t size, size_t max_tensor_size) override;

    bool supports_op(const Tensor& op) const override;
    // Its own device memory only: kernels never read host or other GPUs' memory.
    // Its own memory, and weights split by rows over CUDA devices with this one first (their
    // products run on every slice's GPU: row_split_products.hpp).
    bool supports_buft(const BufferType& buft) const override;
    // Batches of at least offload_min_batch (ne[1]) are worth moving here from weights on the CPU,
    // as ggml decides; get_rows never is (it reads a few rows of a large table).
    bool offload_op(const Tensor& op) const override;
    Result<std::unique_ptr<Event>> event_new() override;

    // --- the CUDA backend's own interface ---
    int id() const { return id_; }
    const CudaDeviceInfo& info() const { return info_; }
    CudaSettings current_settings() const;
    // Failures of synchronous buffer operations, kept (the first one) until a backend reports them.
    void record_error(Status error);
    Status take_error();
    // Lets this device's copies reach `peer`'s memory directly where the hardware can (once per
    // peer). Copies work without it, staged by the driver, so failures only mean slower copies.
    void enable_peer_access(int peer);

private:
    int id_;
    std::string name_;
    CudaDeviceInfo info_;
    mutable std::mutex mutex_;  // guards settings_, error_ and peers_
    std::mutex link_mutex_;     // guards link_probed_ and link_gbps_ (held through the probe)
    bool link_probed_ = false;
    std::optional<double> link_gbps_;
    CudaSettings settings_;
    Status error_;
    std::set<int> peers_;
    CudaBufferType buffer_type_;
    CudaHostBufferType host_buffer_type_;
    CudaHostRegisteredBufferType registered_buffer_type_;
};

}  // namespace xb::cuda
