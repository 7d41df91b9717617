#include "cuda/cublas_library.hpp"

#include <dlfcn.h>

#include <type_traits>

namespace xb::cuda {

namespace {

// Each pointer type must select the header's declaration (static_cast picks among the C++
// overloads the header adds): checked here, unevaluated, so that nothing links against cuBLAS.
#define XB_CUBLAS_SIGNATURE(Fn, symbol) \
    static_assert(std::is_same_v<decltype(static_cast<CublasLibrary::Fn>(&symbol)), CublasLibrary::Fn>, #symbol)
XB_CUBLAS_SIGNATURE(CreateFn, cublasCreate_v2);
XB_CUBLAS_SIGNATURE(DestroyFn, cublasDestroy_v2);
XB_CUBLAS_SIGNATURE(SetStreamFn, cublasSetStream_v2);
XB_CUBLAS_SIGNATURE(SetMathModeFn, cublasSetMathMode);
XB_CUBLAS_SIGNATURE(GemmExFn, cublasGemmEx);
XB_CUBLAS_SIGNATURE(GemmStridedBatchedExFn, cublasGemmStridedBatchedEx);
XB_CUBLAS_SIGNATURE(GemmBatchedExFn, cublasGemmBatchedEx);
#undef XB_CUBLAS_SIGNATURE

Status lookup(void* handle, const std::string& library, const char* symbol, void** out) {
    dlerror();  // clear: a symbol's value may legitimately be null, an error is what dlerror says
    *out = dlsym(handle, symbol);
    if (const char* error = dlerror(); error != nullptr || *out == nullptr) {
        return Status(StatusCode::NotSupported, "cuBLAS: " + library + " has no " + symbol +
                                                    (error != nullptr ? std::string(": ") + error : std::string()));
    }
    return Status::ok();
}

template <typename Fn>
Status lookup(void* handle, const std::string& library, const char* symbol, Fn& out) {
    void* address = nullptr;
    XB_RETURN_IF_ERROR(lookup(handle, library, symbol, &address));
    out = reinterpret_cast<Fn>(address);
    return Status::ok();
}

}  // namespace

std::string cublas_library_name() { return "libcublas.so." + std::to_string(CUBLAS_VER_MAJOR); }

Result<CublasLibrary> open_cublas_library(const std::string& name) {
    void* handle = dlopen(name.c_str(), RTLD_NOW | RTLD_LOCAL);
    if (handle == nullptr) {
        const char* error = dlerror();
        return Status(StatusCode::NotSupported,
                      "cuBLAS: cannot open " + name + (error != nullptr ? std::string(": ") + error : std::string()));
    }
    CublasLibrary lib;
    const Status found = [&]() -> Status {
        XB_RETURN_IF_ERROR(lookup(handle, name, "cublasCreate_v2", lib.create));
        XB_RETURN_IF_ERROR(lookup(handle, name, "cublasDestroy_v2", lib.destroy));
        XB_RETURN_IF_ERROR(lookup(handle, name, "cublasSetStream_v2", lib.set_stream));
        XB_RETURN_IF_ERROR(lookup(handle, name, "cublasSetMathMode", lib.set_math_mode));
        XB_RETURN_IF_ERROR(lookup(handle, name, "cublasGemmEx", lib.gemm_ex));
        XB_RETURN_IF_ERROR(lookup(handle, name, "cublasGemmStridedBatchedEx", lib.gemm_strided_batched_ex));
        return lookup(handle, name, "cublasGemmBatchedEx", lib.gemm_batched_ex);
    }();
    if (!found.is_ok()) {
        dlclose(handle);  // not cuBLAS as xbackend needs it: nothing of it is in use yet
        return found;
    }
    return lib;
}

Result<const CublasLibrary*> cublas_library() {
    // Opened once and never closed: handles and their destructors may run until exit.
    static const Result<CublasLibrary> library = open_cublas_library(cublas_library_name());
    if (!library.is_ok()) return library.status();
    return &library.value();
}

const CublasLibrary& cublas() {
    const Result<const CublasLibrary*> library = cublas_library();
    XB_CHECK(library.is_ok());
    return *library.value();
}

}  // namespace xb::cuda
