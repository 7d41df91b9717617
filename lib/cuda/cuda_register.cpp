#include <memory>

#include "cuda/cuda.hpp"
#include "cuda/cuda_check.hpp"
#include "cuda/cuda_device.hpp"

namespace xb::cuda {

CudaAvailability cuda_availability() {
    int count = 0;
    const cudaError_t error = cudaGetDeviceCount(&count);
    if (error != cudaSuccess) {
        static_cast<void>(cudaGetLastError());  // not a failure of anything that follows
        return {0, std::string(cudaGetErrorName(error)) + ": " + cudaGetErrorString(error)};
    }
    if (count <= 0) return {0, "the CUDA runtime reports no GPU"};
    return {count, {}};
}

void register_cuda_backend(Registry& registry) {
    const CudaAvailability available = cuda_availability();
    if (available.device_count == 0) return;
    BackendReg& reg = registry.add(std::make_unique<BackendReg>("CUDA"));
    for (int id = 0; id < available.device_count; ++id) {
        auto info = query_device_info(id);
        if (!info.is_ok()) continue;  // a GPU whose properties cannot be read is left out
        reg.add_device(std::make_unique<CudaDevice>(reg, id, std::move(info).value()));
    }
}

}  // namespace xb::cuda
