// Move-only owners of CUDA objects: device memory, pinned host memory, streams, events and cuBLAS
// handles. Each is made by a factory that returns the CUDA error as a Status, and released by its
// destructor on the device it was made on. Destructors cannot report failures; they discard them.
#pragma once

#include <cublas_v2.h>
#include <cuda_runtime.h>

#include <cstddef>
#include <memory>
#include <type_traits>

#include "core/status.hpp"

namespace xb::cuda {

// Makes `device` the calling thread's current device, when it is not already (CUDA state such as
// allocations, streams and launches refers to the current device). The previous device is not
// restored: restoring would create a context on a device the thread never used.
Status use_device(int device);

// Memory of one GPU (cudaMalloc).
class DeviceMemory {
public:
    DeviceMemory() = default;
    // `bytes` of memory on `device`; an empty object for 0 bytes. OutOfMemory when it cannot.
    static Result<DeviceMemory> allocate(int device, size_t bytes);

    void* get() const { return ptr_.get(); }
    size_t size() const { return size_; }

private:
    struct Free {
        int device = -1;
        void operator()(void* p) const;
    };
    std::unique_ptr<void, Free> ptr_{nullptr, Free{}};
    size_t size_ = 0;
};

// Page-locked host memory: allocated (cudaHostAlloc) or registered over the caller's memory
// (cudaHostRegister). Portable: every device sees it as pinned.
class PinnedHostMemory {
public:
    PinnedHostMemory() = default;
    static Result<PinnedHostMemory> allocate(size_t bytes);
    // Pins [ptr, ptr + bytes), which the caller owns and keeps alive longer than this object.
    static Result<PinnedHostMemory> register_range(void* ptr, size_t bytes);

    void* get() const { return ptr_.get(); }
    size_t size() const { return size_; }

private:
    struct Release {
        bool registered = false;
        void operator()(void* p) const;
    };
    std::unique_ptr<void, Release> ptr_{nullptr, Release{}};
    size_t size_ = 0;
};

namespace detail {
struct StreamDestroy {
    void operator()(cudaStream_t s) const;
};
struct EventDestroy {
    void operator()(cudaEvent_t e) const;
};
struct CublasDestroy {
    int device = -1;
    void operator()(cublasHandle_t h) const;
};
}  // namespace detail

using StreamPtr = std::unique_ptr<std::remove_pointer_t<cudaStream_t>, detail::StreamDestroy>;
using EventPtr = std::unique_ptr<std::remove_pointer_t<cudaEvent_t>, detail::EventDestroy>;
using CublasPtr = std::unique_ptr<std::remove_pointer_t<cublasHandle_t>, detail::CublasDestroy>;

// A stream of `device` that does not synchronize with the legacy default stream.
Result<StreamPtr> create_stream(int device);
// An event of `device` without timing (cheapest for ordering and waiting).
Result<EventPtr> create_event(int device);
// A cuBLAS handle of `device` whose work goes to `stream`, in the default math mode (no TF32:
// f32 products are computed in f32 unless a call asks for TF32).
Result<CublasPtr> create_cublas(int device, cudaStream_t stream);

}  // namespace xb::cuda
