#include "cuda/cuda_handles.hpp"

#include "cuda/cublas_library.hpp"
#include "cuda/cuda_check.hpp"

namespace xb::cuda {

Status use_device(int device) {
    int current = -1;
    XB_CUDA_RETURN_IF_ERROR(cudaGetDevice(&current));
    if (current != device) XB_CUDA_RETURN_IF_ERROR(cudaSetDevice(device));
    return Status::ok();
}

// --- device memory -------------------------------------------------------------------------------

void DeviceMemory::Free::operator()(void* p) const {
    // Nothing can report a failure here; a failed free leaks at worst.
    if (use_device(device).is_ok()) static_cast<void>(XB_CUDA_STATUS(cudaFree(p)));
}

Result<DeviceMemory> DeviceMemory::allocate(int device, size_t bytes) {
    DeviceMemory memory;
    if (bytes == 0) return memory;
    XB_RETURN_IF_ERROR(use_device(device));
    void* p = nullptr;
    XB_CUDA_RETURN_IF_ERROR(cudaMalloc(&p, bytes));
    memory.ptr_ = std::unique_ptr<void, Free>(p, Free{device});
    memory.size_ = bytes;
    return memory;
}

// --- pinned host memory --------------------------------------------------------------------------

void PinnedHostMemory::Release::operator()(void* p) const {
    if (registered) {
        static_cast<void>(XB_CUDA_STATUS(cudaHostUnregister(p)));
    } else {
        static_cast<void>(XB_CUDA_STATUS(cudaFreeHost(p)));
    }
}

Result<PinnedHostMemory> PinnedHostMemory::allocate(size_t bytes) {
    PinnedHostMemory memory;
    if (bytes == 0) return memory;
    void* p = nullptr;
    XB_CUDA_RETURN_IF_ERROR(cudaHostAlloc(&p, bytes, cudaHostAllocPortable));
    memory.ptr_ = std::unique_ptr<void, Release>(p, Release{false});
    memory.size_ = bytes;
    return memory;
}

Result<PinnedHostMemory> PinnedHostMemory::register_range(void* ptr, size_t bytes) {
    PinnedHostMemory memory;
    if (bytes == 0) return memory;
    XB_CUDA_RETURN_IF_ERROR(cudaHostRegister(ptr, bytes, cudaHostRegisterPortable));
    memory.ptr_ = std::unique_ptr<void, Release>(ptr, Release{true});
    memory.size_ = bytes;
    return memory;
}

// --- streams, events, cuBLAS ---------------------------------------------------------------------

namespace detail {
void StreamDestroy::operator()(cudaStream_t s) const { static_cast<void>(XB_CUDA_STATUS(cudaStreamDestroy(s))); }
void EventDestroy::operator()(cudaEvent_t e) const { static_cast<void>(XB_CUDA_STATUS(cudaEventDestroy(e))); }
void CublasDestroy::operator()(cublasHandle_t h) const {
    if (use_device(device).is_ok()) static_cast<void>(XB_CUBLAS_STATUS(cublas().destroy(h)));
}
}  // namespace detail

Result<StreamPtr> create_stream(int device) {
    XB_RETURN_IF_ERROR(use_device(device));
    cudaStream_t stream = nullptr;
    XB_CUDA_RETURN_IF_ERROR(cudaStreamCreateWithFlags(&stream, cudaStreamNonBlocking));
    return StreamPtr(stream);
}

Result<EventPtr> create_event(int device) {
    XB_RETURN_IF_ERROR(use_device(device));
    cudaEvent_t event = nullptr;
    XB_CUDA_RETURN_IF_ERROR(cudaEventCreateWithFlags(&event, cudaEventDisableTiming));
    return EventPtr(event);
}

Result<CublasPtr> create_cublas(int device, cudaStream_t stream) {
    XB_ASSIGN_OR_RETURN(const CublasLibrary* library, cublas_library());
    XB_RETURN_IF_ERROR(use_device(device));
    cublasHandle_t handle = nullptr;
    XB_CUBLAS_RETURN_IF_ERROR(library->create(&handle));
    CublasPtr owned(handle, detail::CublasDestroy{device});
    XB_CUBLAS_RETURN_IF_ERROR(library->set_stream(handle, stream));
    XB_CUBLAS_RETURN_IF_ERROR(library->set_math_mode(handle, CUBLAS_DEFAULT_MATH));
    return owned;
}

}  // namespace xb::cuda
