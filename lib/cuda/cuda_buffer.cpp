#include "cuda/cuda_buffer.hpp"

#include <cstring>

#include "backend/tensor_io.hpp"
#include "cuda/cuda_check.hpp"
#include "cuda/cuda_device.hpp"
#include "cuda/cuda_error.hpp"

namespace xb::cuda {

namespace {

std::string sized(size_t bytes) { return std::to_string(bytes) + " bytes (" + format_bytes(bytes) + ")"; }

// Runs a synchronous transfer on the calling thread's default stream of `device` and waits for it.
template <typename Enqueue>
Status run_and_wait(int device, Enqueue enqueue) {
    XB_RETURN_IF_ERROR(use_device(device));
    XB_RETURN_IF_ERROR(enqueue(cudaStreamPerThread));
    XB_CUDA_RETURN_IF_ERROR(cudaStreamSynchronize(cudaStreamPerThread));
    return Status::ok();
}

char* at(const Tensor& t, size_t offset) { return static_cast<char*>(t.data) + offset; }

}  // namespace

// --- device memory -------------------------------------------------------------------------------

const char* CudaBufferType::name() const { return device_->name(); }

Device& CudaBufferType::device() const { return *device_; }

Result<std::unique_ptr<Buffer>> CudaBufferType::alloc_buffer(size_t size) {
    auto memory = DeviceMemory::allocate(device_->id(), size);
    if (!memory.is_ok()) {
        const MemoryInfo mem = device_->memory();
        return Status(memory.status().code() == StatusCode::OutOfMemory ? StatusCode::OutOfMemory : StatusCode::Internal,
                      std::string(device_->name()) + ": cannot allocate a buffer of " + sized(size) + ": " +
                          sized(mem.free) + " of the device's " + sized(mem.total) + " are free (" +
                          memory.status().message() + ")");
    }
    return std::unique_ptr<Buffer>(std::make_unique<CudaBuffer>(*this, std::move(memory).value()));
}

CudaBuffer::CudaBuffer(CudaBufferType& type, DeviceMemory memory)
    : Buffer(type, memory.size()), memory_(std::move(memory)) {}

CudaDevice& CudaBuffer::cuda_device() const { return static_cast<CudaBufferType&>(type()).cuda_device(); }

int CudaBuffer::device_id() const { return cuda_device().id(); }

Status CudaBuffer::set_tensor_impl(Tensor& t, const void* data, size_t offset, size_t size) {
    return run_and_wait(device_id(), [&](cudaStream_t s) {
        return XB_CUDA_STATUS(cudaMemcpyAsync(at(t, offset), data, size, cudaMemcpyDefault, s));
    });
}

Status CudaBuffer::get_tensor_impl(const Tensor& t, void* data, size_t offset, size_t size) {
    return run_and_wait(device_id(), [&](cudaStream_t s) {
        return XB_CUDA_STATUS(cudaMemcpyAsync(data, at(t, offset), size, cudaMemcpyDefault, s));
    });
}

Status CudaBuffer::memset_tensor_impl(Tensor& t, uint8_t value, size_t offset, size_t size) {
    return run_and_wait(device_id(), [&](cudaStream_t s) {
        return XB_CUDA_STATUS(cudaMemsetAsync(at(t, offset), value, size, s));
    });
}

Result<bool> CudaBuffer::copy_tensor_impl(const Tensor& src, Tensor& dst) {
    const CudaBuffer* from = cuda_storage(src);
    if (from == nullptr) return false;
    const size_t bytes = src.nbytes();
    const int src_device = from->device_id();
    const int dst_device = device_id();
    if (src_device != dst_device) {
        cuda_device().enable_peer_access(src_device);
        from->cuda_device().enable_peer_access(dst_device);
    }
    XB_RETURN_IF_ERROR(run_and_wait(dst_device, [&](cudaStream_t s) {
        if (src_device == dst_device) {
            return XB_CUDA_STATUS(cudaMemcpyAsync(dst.data, src.data, bytes, cudaMemcpyDeviceToDevice, s));
        }
        return XB_CUDA_STATUS(cudaMemcpyPeerAsync(dst.data, dst_device, src.data, src_device, bytes, s));
    }));
    return true;
}

void CudaBuffer::clear_impl(uint8_t value) {
    if (memory_.get() == nullptr) return;
    cuda_device().record_error(run_and_wait(device_id(), [&](cudaStream_t s) {
        return XB_CUDA_STATUS(cudaMemsetAsync(memory_.get(), value, memory_.size(), s));
    }));
}

CudaBuffer* cuda_storage(const Tensor& t) { return dynamic_cast<CudaBuffer*>(storage_buffer(t)); }

CudaHostBuffer* cuda_host_storage(const Tensor& t) { return dynamic_cast<CudaHostBuffer*>(storage_buffer(t)); }

// --- pinned host memory --------------------------------------------------------------------------

CudaHostBufferType::CudaHostBufferType(CudaDevice& device)
    : device_(&device), name_(std::string(device.name()) + "_Host") {}

Device& CudaHostBufferType::device() const { return *device_; }

Result<std::unique_ptr<Buffer>> CudaHostBufferType::alloc_buffer(size_t size) {
    auto memory = PinnedHostMemory::allocate(size);
    if (!memory.is_ok()) {
        return Status(memory.status().code() == StatusCode::OutOfMemory ? StatusCode::OutOfMemory : StatusCode::Internal,
                      name_ + ": cannot allocate " + sized(size) + " of pinned host memory (" +
                          memory.status().message() + ")");
    }
    return std::unique_ptr<Buffer>(std::make_unique<CudaHostBuffer>(*this, std::move(memory).value()));
}

CudaHostRegisteredBufferType::CudaHostRegisteredBufferType(CudaDevice& device)
    : device_(&device), name_(std::string(device.name()) + "_Host_Registered") {}

Device& CudaHostRegisteredBufferType::device() const { return *device_; }

Result<std::unique_ptr<Buffer>> CudaHostRegisteredBufferType::alloc_buffer(size_t) {
    return Status(StatusCode::NotSupported, name_ + " buffers are made from host pointers (buffer_from_host_ptr)");
}

CudaHostBuffer::CudaHostBuffer(BufferType& type, PinnedHostMemory memory)
    : HostMemoryBuffer(type, memory.get(), memory.size()), memory_(std::move(memory)) {}

Result<bool> CudaHostBuffer::copy_tensor_impl(const Tensor& src, Tensor& dst) {
    const Buffer* from = storage_buffer(src);
    if (from == nullptr) return false;
    if (from->is_host()) return HostMemoryBuffer::copy_tensor_impl(src, dst);
    const CudaBuffer* device_memory = cuda_storage(src);
    if (device_memory == nullptr) return false;
    XB_RETURN_IF_ERROR(run_and_wait(device_memory->device_id(), [&](cudaStream_t s) {
        return XB_CUDA_STATUS(cudaMemcpyAsync(dst.data, src.data, src.nbytes(), cudaMemcpyDeviceToHost, s));
    }));
    return true;
}

}  // namespace xb::cuda
