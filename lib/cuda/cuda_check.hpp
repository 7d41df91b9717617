// Checking every CUDA runtime and cuBLAS call: a failure becomes a Status whose message carries
// the error's name and text, the statement, the function, the file and the line.
//
//   XB_CUDA_RETURN_IF_ERROR(cudaMalloc(&p, n));      // returns the Status from the enclosing function
//   Status s = XB_CUDA_STATUS(cudaStreamSynchronize(stream));   // Ok, or the failure, to keep
//
// Kernel launches are checked with XB_CUDA_RETURN_IF_ERROR(cudaGetLastError()) right after them.
#pragma once

#include <cublas_v2.h>
#include <cuda_runtime.h>

#include "core/status.hpp"
#include "cuda/cuda_error.hpp"

namespace xb::cuda {

// OutOfMemory for allocation failures, Internal for everything else.
StatusCode status_code_for(cudaError_t error);
StatusCode status_code_for(cublasStatus_t status);

// Ok for cudaSuccess; otherwise the error as a Status. Also clears the thread's last-error slot, so
// that a later launch check does not report this failure a second time.
Status cuda_call_status(cudaError_t error, const CallSite& site);
// Ok for CUBLAS_STATUS_SUCCESS; otherwise the failure as a Status.
Status cublas_call_status(cublasStatus_t status, const CallSite& site);

}  // namespace xb::cuda

#define XB_CUDA_STATUS(stmt) ::xb::cuda::cuda_call_status((stmt), ::xb::cuda::CallSite{#stmt, __func__, __FILE__, __LINE__})
#define XB_CUBLAS_STATUS(stmt) \
    ::xb::cuda::cublas_call_status((stmt), ::xb::cuda::CallSite{#stmt, __func__, __FILE__, __LINE__})

#define XB_CUDA_RETURN_IF_ERROR(stmt)                                                                    \
    do {                                                                                                 \
        const cudaError_t xb_cuda_error_ = (stmt);                                                       \
        if (xb_cuda_error_ != cudaSuccess) {                                                             \
            return ::xb::cuda::cuda_call_status(xb_cuda_error_,                                          \
                                                ::xb::cuda::CallSite{#stmt, __func__, __FILE__, __LINE__}); \
        }                                                                                                \
    } while (0)

#define XB_CUBLAS_RETURN_IF_ERROR(stmt)                                                                    \
    do {                                                                                                   \
        const cublasStatus_t xb_cublas_status_ = (stmt);                                                   \
        if (xb_cublas_status_ != CUBLAS_STATUS_SUCCESS) {                                                  \
            return ::xb::cuda::cublas_call_status(xb_cublas_status_,                                       \
                                                  ::xb::cuda::CallSite{#stmt, __func__, __FILE__, __LINE__}); \
        }                                                                                                  \
    } while (0)
