// XB_HD marks functions that are compiled for both the host and CUDA devices, so that element-wise
// math and type conversions have one definition that the CPU tests exercise.
#pragma once

#if defined(__CUDACC__)
#define XB_HD __host__ __device__ __forceinline__
#else
#define XB_HD inline
#endif
