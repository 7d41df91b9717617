// The block struct of each quantized type, for kernels instantiated once per type: core's mapping.
#pragma once

#include <cuda_runtime.h>

#include <string>

#include "core/quant_block_types.hpp"
#include "core/status.hpp"
#include "cuda/cuda_check.hpp"

namespace xb::cuda {

using xb::BlockTag;
using xb::with_block_type;

// Queues a kernel for quantized `type`'s block struct: `launch(tag)` launches it for
// `typename decltype(tag)::type` and returns true, or false where that type has none. Then the
// launch's error, or a `code` status "<missing><type name>" when nothing was launched.
template <typename Launch>
Status launch_for_block_type(DType type, Launch&& launch, StatusCode code, const char* missing) {
    if (!with_block_type(type, launch, false)) return Status(code, std::string(missing) + dtype_name(type));
    XB_CUDA_RETURN_IF_ERROR(cudaGetLastError());
    return Status::ok();
}

}  // namespace xb::cuda
