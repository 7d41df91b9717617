// The BLAS backend: an accelerator device that computes mul_mat and out_prod with OpenBLAS's
// cblas_sgemm on host memory, as ggml's BLAS backend does.
//
// It has no memory of its own: its buffer type is the CPU device's, and it accepts any host
// buffer, so the scheduler can split a graph between BLAS and CPU without copying. It claims only
// mul_mat and out_prod (f32/f16/bf16 operands, any strides; f16/bf16 are converted to f32 in
// scratch memory the backend owns) plus the nodes that compute nothing (views, None).
//
// Settings ("key=value,..."):
//   threads=N    threads for this backend's products: each sgemm is split over N OpenMP threads
//                (default: the CPU backend's, backend/host_threads.hpp: they share one OpenMP
//                team). Accepted by init_backend and Backend::set_n_threads, and
//                by Device::configure as the count of backends that were given none of their own.
//   min_batch=N  device only: claim mul_mat only when m, n and k are all >= N (default 0: every
//                size). ggml's BLAS backend uses 32 so that small products stay on the CPU.
//
// OpenBLAS's thread count is process-wide state; see blas/openblas.hpp for how it is handled.
#pragma once

#include <atomic>
#include <cstdint>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <string_view>

#include "backend/backend.hpp"
#include "backend/registry.hpp"
#include "blas/matmul.hpp"

namespace xb::blas {

struct BlasOptions {
    std::optional<int> n_threads;
    std::optional<int64_t> min_batch;
};
// Parses "threads=N" (or "n_threads=N") and "min_batch=N"; unknown keys and values that are not
// integers in range are InvalidArgument.
Result<BlasOptions> parse_blas_options(std::string_view params);

class BlasDevice final : public Device {
public:
    // `host` is the CPU device: its buffer type and memory are the BLAS device's.
    BlasDevice(BackendReg& reg, Device& host);

    const char* name() const override { return "BLAS"; }
    std::string description() const override { return description_; }
    MemoryInfo memory() const override { return host_->memory(); }
    DeviceType type() const override { return DeviceType::Accel; }
    DeviceCaps caps() const override;

    Status configure(std::string_view params) override;
    std::string settings() const override;

    Result<std::unique_ptr<Backend>> init_backend(std::string_view params) override;
    BufferType& buffer_type() override { return host_->buffer_type(); }
    Result<std::unique_ptr<Buffer>> buffer_from_host_ptr(void* ptr, size_t size, size_t max_tensor_size) override;

    bool supports_op(const Tensor& op) const override;
    bool supports_buft(const BufferType& buft) const override { return buft.is_host(); }

    // The thread count of backends that were given none.
    int n_threads() const { return n_threads_.load(); }
    int64_t min_batch() const { return min_batch_.load(); }
    // Held by a backend while it has OpenBLAS's global thread count set to its own.
    std::mutex& openblas_mutex() { return openblas_mutex_; }

private:
    Device* host_;
    std::string description_;
    std::atomic<int> n_threads_;
    std::atomic<int64_t> min_batch_{0};
    std::mutex openblas_mutex_;
};

class BlasBackend final : public Backend {
public:
    // n_threads 0: follow the device's setting.
    BlasBackend(BlasDevice& device, int n_threads);

    const char* name() const override { return "BLAS"; }
    // Computes the mul_mat and out_prod nodes; views and leafs are skipped. Any other op is
    // NotSupported (the scheduler never sends one), naming the node.
    Status graph_compute_async(const Graph& graph) override;

    bool set_n_threads(int n_threads) override;
    // The count this backend's sgemm calls use.
    int n_threads() const;
    // Bytes of scratch held for converted operands (for tests and reports).
    size_t scratch_bytes() const { return ws_.a.capacity_bytes() + ws_.b.capacity_bytes(); }

private:
    Status check_node(const Tensor& node) const;

    BlasDevice* device_;
    int n_threads_;
    Workspace ws_;
};

// Registers the "BLAS" backend family and its device. The CPU device must be registered first
// (its buffer type is shared); without it nothing is registered.
void register_blas_backend(Registry& registry);


}  // namespace xb::blas
