// Text of CUDA and cuBLAS call failures. Pure host code without CUDA headers, so that the message
// format is unit-tested on machines without a GPU (cuda_check.hpp turns real errors into these).
#pragma once

#include <cstddef>
#include <string>
#include <string_view>

namespace xb::cuda {

// Where a checked call was made: the statement as written, the enclosing function, file and line.
struct CallSite {
    const char* statement;
    const char* function;
    const char* file;
    int line;
};

// The part of a __FILE__ path from its "lib/" (or "tests/", "apps/") folder on, else its file name:
// messages name the source without the build machine's checkout path.
std::string_view short_source_path(std::string_view file);

// "CUDA error cudaErrorMemoryAllocation (out of memory) in `cudaMalloc(&p, n)` at lib/cuda/x.cpp:12 (alloc)"
// `library` is "CUDA" or "cuBLAS".
std::string format_call_error(std::string_view library, std::string_view error_name, std::string_view error_text,
                              const CallSite& site);

// Sizes for messages: "512 B", "1.5 KiB", "79.2 GiB" (core's bytes_text).
std::string format_bytes(size_t bytes);

}  // namespace xb::cuda
