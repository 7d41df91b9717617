// The CPU buffer types: aligned host memory, and buffers over memory the caller owns (both make
// backend/host_buffer.hpp's HostBuffer).
#pragma once

#include <cstddef>
#include <memory>

#include "backend/buffer.hpp"
#include "backend/host_buffer.hpp"
#include "core/aligned_bytes.hpp"

namespace xb::cpu {

// Host memory for a buffer of one of the CPU device's types (`type_name` names it in errors): the
// failure fail_alloc injects, a size beyond the machine's memory and a failed allocation each give
// OutOfMemory; huge pages as the device's setting says.
Result<AlignedBytes> allocate_cpu_memory(Device& device, const char* type_name, size_t size);

// The CPU's buffer types: "CPU", aligned host memory (ggml_backend_cpu_buffer_type), and
// "CPU_Mapped", whose buffers are made over caller-owned memory (ggml_backend_cpu_buffer_from_ptr)
// and never allocated.
class CpuBufferType final : public BufferType {
public:
    enum class Memory { Allocated, CallerOwned };
    CpuBufferType(Device& device, Memory memory) : device_(&device), memory_(memory) {}

    const char* name() const override { return memory_ == Memory::Allocated ? "CPU" : "CPU_Mapped"; }
    Result<std::unique_ptr<Buffer>> alloc_buffer(size_t size) override;
    size_t alignment() const override { return kHostAlignment; }
    bool is_host() const override { return true; }
    Device& device() const override { return *device_; }

private:
    Device* device_;
    Memory memory_;
};

}  // namespace xb::cpu
