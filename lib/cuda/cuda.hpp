// The CUDA backend's entry points for the rest of the library: registration of the GPUs present,
// and the probe that says why there are none. No CUDA headers: any translation unit may include it.
//
// Devices are "CUDA0".."CUDAn" (type GPU), registered by register_builtin_backends after the CPU
// and BLAS and before the simulated devices. See cuda_device.hpp for what each device offers.
#pragma once

#include <string>

#include "backend/registry.hpp"

namespace xb::cuda {

struct CudaAvailability {
    int device_count = 0;
    // Why there is no device when device_count is 0 ("cudaErrorNoDevice: no CUDA-capable device is
    // detected"), for skip messages and --list-devices.
    std::string reason;
};

// Asks the CUDA runtime how many GPUs there are. Never fails: a missing driver or GPU is a count
// of 0 with its reason.
CudaAvailability cuda_availability();

// Registers the "CUDA" family with one device per GPU; registers nothing when there is no GPU.
void register_cuda_backend(Registry& registry);

}  // namespace xb::cuda
