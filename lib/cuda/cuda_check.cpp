#include "cuda/cuda_check.hpp"

namespace xb::cuda {

namespace {

// cuBLAS's own cublasGetStatusName/String would need the library open (cublas_library.hpp), and a
// status can be reported before it is (a test's, or a caller's); the enumeration is short.
struct CublasStatusText {
    const char* name;
    const char* text;
};
CublasStatusText cublas_status_text(cublasStatus_t status) {
    switch (status) {
        case CUBLAS_STATUS_SUCCESS: return {"CUBLAS_STATUS_SUCCESS", "success"};
        case CUBLAS_STATUS_NOT_INITIALIZED: return {"CUBLAS_STATUS_NOT_INITIALIZED", "the library was not initialized"};
        case CUBLAS_STATUS_ALLOC_FAILED: return {"CUBLAS_STATUS_ALLOC_FAILED", "the resource allocation failed"};
        case CUBLAS_STATUS_INVALID_VALUE: return {"CUBLAS_STATUS_INVALID_VALUE", "an invalid numeric value was used as an argument"};
        case CUBLAS_STATUS_ARCH_MISMATCH: return {"CUBLAS_STATUS_ARCH_MISMATCH", "an absent device architectural feature is required"};
        case CUBLAS_STATUS_MAPPING_ERROR: return {"CUBLAS_STATUS_MAPPING_ERROR", "an access to GPU memory space failed"};
        case CUBLAS_STATUS_EXECUTION_FAILED: return {"CUBLAS_STATUS_EXECUTION_FAILED", "the GPU program failed to execute"};
        case CUBLAS_STATUS_INTERNAL_ERROR: return {"CUBLAS_STATUS_INTERNAL_ERROR", "an internal operation failed"};
        case CUBLAS_STATUS_NOT_SUPPORTED: return {"CUBLAS_STATUS_NOT_SUPPORTED", "the functionality requested is not supported"};
        case CUBLAS_STATUS_LICENSE_ERROR: return {"CUBLAS_STATUS_LICENSE_ERROR", "an error was detected when checking the current licensing"};
    }
    return {"CUBLAS_STATUS_UNKNOWN", "an unknown cuBLAS status"};
}

}  // namespace

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
    const CublasStatusText text = cublas_status_text(status);
    return Status(status_code_for(status), format_call_error("cuBLAS", text.name, text.text, site));
}

}  // namespace xb::cuda
