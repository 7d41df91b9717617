// Settings of CUDA devices and backends, given as "key=value,..." to Device::configure (the
// device's defaults) or Device::init_backend (one backend):
//
//   offload_min_batch=N   offload_op claims ops whose batch (Device::offload_batch) is at least N; 0 claims every
//                         op (default 32, as ggml). Device-wide: offload_op is a device query.
//   tf32=0|1              f32 matrix products on TF32 tensor cores: faster, but results no longer
//                         match the CPU within f32 tolerances (default 0).
//   graphs=0|1            a graph computed again unchanged is replayed as one captured CUDA graph
//                         instead of a launch per node (default 1; graph_replay.hpp).
//
// Pure host code, unit-tested without a GPU.
#pragma once

#include <optional>
#include <string>
#include <string_view>

#include "core/status.hpp"

namespace xb::cuda {

struct CudaSettings {
    int offload_min_batch = 32;
    bool tf32 = false;
    bool graphs = true;
};

// The keys a parameter string sets; the others stay as they are.
struct CudaSettingsUpdate {
    std::optional<int> offload_min_batch;
    std::optional<bool> tf32;
    std::optional<bool> graphs;

    void apply_to(CudaSettings& settings) const;
};

// InvalidArgument naming the device, the key and what is accepted, for unknown keys or bad values.
Result<CudaSettingsUpdate> parse_cuda_params(std::string_view params, std::string_view device_name);
// "offload_min_batch=32,tf32=0,graphs=1"
std::string format_cuda_settings(const CudaSettings& settings);

}  // namespace xb::cuda
