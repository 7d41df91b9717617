#include "cuda/cuda_check.hpp"

namespace xb::cuda {

StatusCode status_code_for(cudaError_t error) {
    return error == cudaErrorMemoryAllocation ? StatusCode::OutOfMemory : StatusCode::Internal;
}

StatusCode status_code_for(cublasStatus_t status) {
    switch (status) {
        case CUBLAS_STATUS_ALLOC_FAILED: return StatusCode::OutOfMemory;
        case CUBLAS_STATUS_NOT_SUPPORTED: return StatusCode::NotSupported;
        case CUBLAS_STATUS_INVALID_VALUE: return StatusCode::InvalidArgument;
        default: return StatusCode::Internal;
    }
}

Status cuda_call_status(cudaError_t error, const CallSite& site) {
    if (error == cudaSuccess) return Status::ok();
    // Read (and reset) the last error: non-sticky errors must not resurface at the next check.
    static_cast<void>(cudaGetLastError());
    return Status(status_code_for(error),
                  format_call_error("CUDA", cudaGetErrorName(error), cudaGetErrorString(error), site));
}

Status cublas_call_status(cublasStatus_t status, const CallSite& site) {
    if (status == CUBLAS_STATUS_SUCCESS) return Status::ok();
    return Status(status_code_for(status),
                  format_call_error("cuBLAS", cublasGetStatusName(status), cublasGetStatusString(status), site));
}

}  // namespace xb::cuda
