#include "cpu/cpu_buffer_type.hpp"

#include <string>

#include "backend/device.hpp"
#include "backend/host_memory.hpp"
#include "backend/huge_pages.hpp"
#include "cpu/cpu_backend.hpp"

namespace xb::cpu {

Result<AlignedBytes> allocate_cpu_memory(Device& device, const char* type_name, size_t size) {
    const std::string what = std::string(type_name) + ": cannot allocate a buffer of " + std::to_string(size) + " bytes";
    auto& cpu = static_cast<CpuDevice&>(device);
    if (cpu.allocation_fails()) return Status(StatusCode::OutOfMemory, what + ": the failure fail_alloc injected");
    // Refuse sizes the machine cannot have before asking the allocator: some allocators (and the
    // sanitizers' ones) abort on absurd requests instead of failing.
    if (size > physical_memory_bytes()) {
        return Status(StatusCode::OutOfMemory, what + ": the machine has " + std::to_string(physical_memory_bytes()) + " bytes of memory");
    }
    AlignedBytes memory = allocate_host_bytes(size, kHostAlignment, cpu.huge_pages());
    if (size > 0 && memory.data() == nullptr) return Status(StatusCode::OutOfMemory, what);
    return memory;
}

Result<std::unique_ptr<Buffer>> CpuBufferType::alloc_buffer(size_t size) {
    if (memory_ == Memory::CallerOwned) {
        return Status(StatusCode::NotSupported, "CPU_Mapped buffers are made from host pointers, not allocated");
    }
    XB_ASSIGN_OR_RETURN(AlignedBytes memory, allocate_cpu_memory(*device_, name(), size));
    return std::unique_ptr<Buffer>(std::make_unique<HostBuffer>(*this, std::move(memory)));
}

}  // namespace xb::cpu
