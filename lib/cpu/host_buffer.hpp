// Buffers in host memory: the CPU buffer type, and buffers over memory the caller owns.
#pragma once

#include <cstddef>
#include <memory>

#include "backend/buffer.hpp"
#include "core/aligned_bytes.hpp"

namespace xb::cpu {

// A buffer whose memory the host addresses directly: either owned (AlignedBytes) or borrowed.
class HostBuffer final : public Buffer {
public:
    HostBuffer(BufferType& type, AlignedBytes memory);
    HostBuffer(BufferType& type, void* borrowed, size_t size);

    void* base() override { return base_; }
    void set_tensor(Tensor& t, const void* data, size_t offset, size_t size) override;
    void get_tensor(const Tensor& t, void* data, size_t offset, size_t size) override;
    void memset_tensor(Tensor& t, uint8_t value, size_t offset, size_t size) override;
    bool copy_tensor(const Tensor& src, Tensor& dst) override;
    void clear(uint8_t value) override;

private:
    AlignedBytes owned_;
    std::byte* base_;
};

// "CPU": aligned host memory (ggml_backend_cpu_buffer_type).
class CpuBufferType final : public BufferType {
public:
    explicit CpuBufferType(Device& device) : device_(&device) {}

    const char* name() const override { return "CPU"; }
    Result<std::unique_ptr<Buffer>> alloc_buffer(size_t size) override;
    size_t alignment() const override { return kAlignment; }
    bool is_host() const override { return true; }
    Device& device() const override { return *device_; }

    static constexpr size_t kAlignment = 64;  // a cache line: whole AVX-512 vectors

private:
    Device* device_;
};

// The type of buffers made over caller-owned memory (ggml_backend_cpu_buffer_from_ptr).
class CpuFromPtrBufferType final : public BufferType {
public:
    explicit CpuFromPtrBufferType(Device& device) : device_(&device) {}

    const char* name() const override { return "CPU_Mapped"; }
    Result<std::unique_ptr<Buffer>> alloc_buffer(size_t size) override;
    size_t alignment() const override { return CpuBufferType::kAlignment; }
    bool is_host() const override { return true; }
    Device& device() const override { return *device_; }

private:
    Device* device_;
};

// Total physical memory of the machine, in bytes.
size_t physical_memory_bytes();
// Memory currently available to new allocations, in bytes.
size_t available_memory_bytes();

}  // namespace xb::cpu
