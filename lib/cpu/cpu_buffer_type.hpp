// The CPU buffer types: aligned host memory, and buffers over memory the caller owns (both make
// backend/host_buffer.hpp's HostBuffer).
#pragma once

#include <cstddef>
#include <memory>

#include "backend/buffer.hpp"
#include "backend/host_buffer.hpp"

namespace xb::cpu {

// "CPU": aligned host memory (ggml_backend_cpu_buffer_type).
class CpuBufferType final : public BufferType {
public:
    explicit CpuBufferType(Device& device) : device_(&device) {}

    const char* name() const override { return "CPU"; }
    Result<std::unique_ptr<Buffer>> alloc_buffer(size_t size) override;
    size_t alignment() const override { return kHostAlignment; }
    bool is_host() const override { return true; }
    Device& device() const override { return *device_; }

private:
    Device* device_;
};

// The type of buffers made over caller-owned memory (ggml_backend_cpu_buffer_from_ptr).
class CpuFromPtrBufferType final : public BufferType {
public:
    explicit CpuFromPtrBufferType(Device& device) : device_(&device) {}

    const char* name() const override { return "CPU_Mapped"; }
    Result<std::unique_ptr<Buffer>> alloc_buffer(size_t size) override;
    size_t alignment() const override { return kHostAlignment; }
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
