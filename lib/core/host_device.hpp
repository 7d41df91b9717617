// XB_HD marks functions that are compiled for both the host and CUDA devices, so that element-wise
// math and type conversions have one definition that the CPU tests exercise.
#pragma once

// On the host they are always inlined, as on the device: the translation units compiled for AVX2 or
// AVX-512 (lib/cpu_kernels/*_<isa>.cpp) call them too, and an out-of-line copy emitted there (as
// unoptimised and sanitized builds do) would be a weak symbol the linker may keep for every caller,
// running that instruction set's code on CPUs without it.
#if defined(__CUDACC__)
#define XB_HD __host__ __device__ __forceinline__
#else
#define XB_HD inline __attribute__((always_inline))
#endif
