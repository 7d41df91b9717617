// DeviceScratch: a backend's working memory for the nodes that need some (packed GEMM operands,
// pointer arrays, rope's table). One allocation, grown to the largest need of the graphs queued
// so far; work on the backend's stream uses it in order, so nodes can share it.
#pragma once

#include <cuda_runtime.h>

#include <cstddef>

#include "core/status.hpp"
#include "cuda/cuda_handles.hpp"

namespace xb::cuda {

class DeviceScratch {
public:
    // At least `bytes` for work queued on `stream` from now on. A larger allocation replaces the old
    // one only after the stream has finished with it.
    Status reserve(int device, size_t bytes, cudaStream_t stream);

    char* data() const { return static_cast<char*>(memory_.get()); }
    size_t size() const { return memory_.size(); }

private:
    DeviceMemory memory_;
};

}  // namespace xb::cuda
