#include "cuda/device_scratch.hpp"

#include "cuda/cuda_check.hpp"
#include "cuda/cuda_error.hpp"

namespace xb::cuda {

Status DeviceScratch::reserve(int device, size_t bytes, cudaStream_t stream) {
    if (bytes <= memory_.size()) return Status::ok();
    constexpr size_t kGranule = size_t{1} << 20;  // fewer regrowths as graphs vary a little
    const size_t want = (bytes + kGranule - 1) / kGranule * kGranule;
    XB_RETURN_IF_ERROR(use_device(device));
    XB_CUDA_RETURN_IF_ERROR(cudaStreamSynchronize(stream));  // queued kernels may still use the old memory
    memory_ = DeviceMemory();
    auto grown = DeviceMemory::allocate(device, want);
    if (!grown.is_ok()) {
        return Status(grown.status().code(), "cannot allocate " + format_bytes(want) +
                                                 " of scratch memory for the graph: " + grown.status().message());
    }
    memory_ = std::move(grown).value();
    return Status::ok();
}

}  // namespace xb::cuda
