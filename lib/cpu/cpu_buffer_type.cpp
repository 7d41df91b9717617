#include "cpu/cpu_buffer_type.hpp"

#include <string>

#include "backend/device.hpp"
#include "backend/host_memory.hpp"
#include "backend/huge_pages.hpp"
#include "cpu/cpu_backend.hpp"

namespace xb::cpu {

Result<std::unique_ptr<Buffer>> CpuBufferType::alloc_buffer(size_t size) {
    if (memory_ == Memory::CallerOwned) {
        return Status(StatusCode::NotSupported, "CPU_Mapped buffers are made from host pointers, not allocated");
    }
    if (static_cast<CpuDevice*>(device_)->allocation_fails()) {
        return Status(StatusCode::OutOfMemory, "CPU: cannot allocate a buffer of " + std::to_string(size) +
                                                   " bytes: the failure fail_alloc injected");
    }
    // Refuse sizes the machine cannot have before asking the allocator: some allocators (and the
    // sanitizers' ones) abort on absurd requests instead of failing.
    if (size > physical_memory_bytes()) {
        return Status(StatusCode::OutOfMemory, "CPU: cannot allocate a buffer of " + std::to_string(size) +
                                                   " bytes: the machine has " +
                                                   std::to_string(physical_memory_bytes()) + " bytes of memory");
    }
    AlignedBytes memory = allocate_host_bytes(size, kHostAlignment, static_cast<CpuDevice*>(device_)->huge_pages());
    if (size > 0 && memory.data() == nullptr) {
        return Status(StatusCode::OutOfMemory, "CPU: cannot allocate a buffer of " + std::to_string(size) + " bytes");
    }
    return std::unique_ptr<Buffer>(std::make_unique<HostBuffer>(*this, std::move(memory)));
}

}  // namespace xb::cpu
