// cuBLAS, opened when the first CUDA backend or handle asks for it, not at program start.
//
// Linked as a shared library, cuBLAS is loaded (with cuBLASLt) into every process that starts one
// of the tools, GPU or not: relocating cuBLASLt alone made 225 MB resident before main ran, about a
// fifth of a 1B model's peak memory, on machines that never touch a GPU. Opened on first use, it
// costs nothing where no CUDA device is used. The entry points xbackend calls are looked up once;
// the table is immutable afterwards.
#pragma once

#include <cublas_v2.h>

#include <string>

#include "core/status.hpp"

namespace xb::cuda {

struct CublasLibrary {
    using CreateFn = cublasStatus_t (*)(cublasHandle_t*);
    using DestroyFn = cublasStatus_t (*)(cublasHandle_t);
    using SetStreamFn = cublasStatus_t (*)(cublasHandle_t, cudaStream_t);
    using SetMathModeFn = cublasStatus_t (*)(cublasHandle_t, cublasMath_t);
    using GemmExFn = cublasStatus_t (*)(cublasHandle_t, cublasOperation_t, cublasOperation_t, int, int, int,
                                        const void*, const void*, cudaDataType, int, const void*, cudaDataType, int,
                                        const void*, void*, cudaDataType, int, cublasComputeType_t, cublasGemmAlgo_t);
    using GemmStridedBatchedExFn = cublasStatus_t (*)(cublasHandle_t, cublasOperation_t, cublasOperation_t, int, int,
                                                      int, const void*, const void*, cudaDataType, int, long long,
                                                      const void*, cudaDataType, int, long long, const void*, void*,
                                                      cudaDataType, int, long long, int, cublasComputeType_t,
                                                      cublasGemmAlgo_t);
    using GemmBatchedExFn = cublasStatus_t (*)(cublasHandle_t, cublasOperation_t, cublasOperation_t, int, int, int,
                                               const void*, const void* const[], cudaDataType, int,
                                               const void* const[], cudaDataType, int, const void*, void* const[],
                                               cudaDataType, int, int, cublasComputeType_t, cublasGemmAlgo_t);

    CreateFn create = nullptr;
    DestroyFn destroy = nullptr;
    SetStreamFn set_stream = nullptr;
    SetMathModeFn set_math_mode = nullptr;
    GemmExFn gemm_ex = nullptr;
    GemmStridedBatchedExFn gemm_strided_batched_ex = nullptr;
    GemmBatchedExFn gemm_batched_ex = nullptr;
};

// The shared library's name: the major version of the headers xbackend was compiled with.
std::string cublas_library_name();

// Opens `name` and looks up the entry points; a missing library or symbol is one error naming it.
// (The process-wide table below calls this once; tests call it with names that do not exist.)
Result<CublasLibrary> open_cublas_library(const std::string& name);

// The process's cuBLAS, opened on the first call (thread-safe); the same result on every call.
Result<const CublasLibrary*> cublas_library();

// The table, for code that holds a cuBLAS handle: only create_cublas (cuda_handles.hpp) makes one,
// after cublas_library() succeeded. Calling it otherwise is a programming error (checked).
const CublasLibrary& cublas();

}  // namespace xb::cuda
