// CUDA buffers: device memory of one GPU ("CUDA0"), and pinned host memory ("CUDA0_Host", and
// "CUDA0_Host_Registered" over the caller's memory) that the CPU computes in directly and that
// copies to and from the GPU reach at full speed.
//
// The synchronous members (set/get/memset/copy/clear) run on the calling thread's per-thread
// default stream and wait for it; they are not ordered with work queued on backends' streams, so
// callers synchronize those first (as tensor_copy_async's fallback and the scheduler do). Their
// failures are returned, except clear's (the Buffer interface has no status there), which is
// recorded on the device and reported by the next take_async_error of any of its backends.
#pragma once

#include <cstddef>
#include <memory>
#include <string>

#include "backend/buffer.hpp"
#include "backend/buffer_type.hpp"
#include "backend/host_buffer.hpp"
#include "cuda/cuda_handles.hpp"

namespace xb::cuda {

class CudaDevice;

// Device memory of one GPU.
class CudaBufferType final : public BufferType {
public:
    explicit CudaBufferType(CudaDevice& device) : device_(&device) {}

    const char* name() const override;
    // OutOfMemory naming the size asked for and the device's free and total memory.
    Result<std::unique_ptr<Buffer>> alloc_buffer(size_t size) override;
    // Enough for every vector load the kernels make; cudaMalloc itself aligns to 256.
    size_t alignment() const override { return 256; }
    // The kernels never read past a tensor's bytes: no padding (the default alloc_size).
    Device& device() const override;
    CudaDevice& cuda_device() const { return *device_; }

private:
    CudaDevice* device_;
};

class CudaBuffer final : public Buffer {
public:
    CudaBuffer(CudaBufferType& type, DeviceMemory memory);

    CudaDevice& cuda_device() const;
    int device_id() const;

protected:
    void* base_impl() override { return memory_.get(); }
    Status set_tensor_impl(Tensor& t, const void* data, size_t offset, size_t size) override;
    Status get_tensor_impl(const Tensor& t, void* data, size_t offset, size_t size) override;
    Status memset_tensor_impl(Tensor& t, uint8_t value, size_t offset, size_t size) override;
    // From device memory of any CUDA device (peer copy across devices); false for other memory.
    Result<bool> copy_tensor_impl(const Tensor& src, Tensor& dst) override;
    void clear_impl(uint8_t value) override;

private:
    DeviceMemory memory_;
};

// Pinned host memory allocated by CUDA.
class CudaHostBufferType final : public BufferType {
public:
    explicit CudaHostBufferType(CudaDevice& device);

    const char* name() const override { return name_.c_str(); }
    Result<std::unique_ptr<Buffer>> alloc_buffer(size_t size) override;
    size_t alignment() const override { return 64; }  // as the CPU's buffers: whole AVX-512 vectors
    bool is_host() const override { return true; }
    bool is_pinned() const override { return true; }
    Device& device() const override;

private:
    CudaDevice* device_;
    std::string name_;
};

// Pinned host memory registered over memory the caller owns (Device::buffer_from_host_ptr).
class CudaHostRegisteredBufferType final : public BufferType {
public:
    explicit CudaHostRegisteredBufferType(CudaDevice& device);

    const char* name() const override { return name_.c_str(); }
    // Buffers of this type are made from host pointers only.
    Result<std::unique_ptr<Buffer>> alloc_buffer(size_t size) override;
    size_t alignment() const override { return 64; }
    bool is_host() const override { return true; }
    bool is_pinned() const override { return true; }
    Device& device() const override;
    CudaDevice& cuda_device() const { return *device_; }

private:
    CudaDevice* device_;
    std::string name_;
};

// Pinned host memory: host byte access, plus copies from the GPU.
class CudaHostBuffer final : public HostMemoryBuffer {
public:
    CudaHostBuffer(BufferType& type, PinnedHostMemory memory);

protected:
    // From host memory, or from device memory of any CUDA device.
    Result<bool> copy_tensor_impl(const Tensor& src, Tensor& dst) override;

private:
    PinnedHostMemory memory_;
};

// The CUDA device buffer holding t's bytes (through its view source); nullptr for other memory.
CudaBuffer* cuda_storage(const Tensor& t);
// The pinned host buffer (allocated or registered by CUDA) holding t's bytes; nullptr for other memory.
CudaHostBuffer* cuda_host_storage(const Tensor& t);

}  // namespace xb::cuda
