// Buffers in memory the host addresses directly: the CPU's buffers and CUDA's pinned host buffers
// share this base, whose byte access is memcpy and memset.
#pragma once

#include <cstddef>
#include <cstdint>

#include "backend/buffer.hpp"
#include "core/aligned_bytes.hpp"

namespace xb {

// Alignment of host buffers and scratch: a cache line, whole AVX-512 vectors.
inline constexpr size_t kHostAlignment = 64;

// A subclass owns the memory (or borrows it) and gives its address to the constructor.
class HostMemoryBuffer : public Buffer {
protected:
    HostMemoryBuffer(BufferType& type, void* base, size_t size)
        : Buffer(type, size), base_(static_cast<std::byte*>(base)) {}

    void* base_impl() final { return base_; }
    Status set_tensor_impl(Tensor& t, const void* data, size_t offset, size_t size) override;
    Status get_tensor_impl(const Tensor& t, void* data, size_t offset, size_t size) override;
    Status memset_tensor_impl(Tensor& t, uint8_t value, size_t offset, size_t size) override;
    // From any host memory; a subclass may add other sources.
    Result<bool> copy_tensor_impl(const Tensor& src, Tensor& dst) override;
    void clear_impl(uint8_t value) override;

private:
    std::byte* base_;
};

// Host memory owned as AlignedBytes, or borrowed from the caller (ggml_backend_cpu_buffer_from_ptr).
class HostBuffer final : public HostMemoryBuffer {
public:
    HostBuffer(BufferType& type, AlignedBytes memory)
        : HostMemoryBuffer(type, memory.data(), memory.size()), owned_(std::move(memory)) {}
    HostBuffer(BufferType& type, void* borrowed, size_t size) : HostMemoryBuffer(type, borrowed, size) {}

private:
    AlignedBytes owned_;
};

}  // namespace xb
