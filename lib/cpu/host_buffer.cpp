#include "cpu/host_buffer.hpp"

#include <unistd.h>

#include <cstring>
#include <string>

#include "backend/device.hpp"

namespace xb::cpu {

HostBuffer::HostBuffer(BufferType& type, AlignedBytes memory)
    : Buffer(type, memory.size()), owned_(std::move(memory)), base_(owned_.data()) {}

HostBuffer::HostBuffer(BufferType& type, void* borrowed, size_t size)
    : Buffer(type, size), base_(static_cast<std::byte*>(borrowed)) {}

void HostBuffer::set_tensor(Tensor& t, const void* data, size_t offset, size_t size) {
    std::memcpy(static_cast<std::byte*>(t.data) + offset, data, size);
}

void HostBuffer::get_tensor(const Tensor& t, void* data, size_t offset, size_t size) {
    std::memcpy(data, static_cast<const std::byte*>(t.data) + offset, size);
}

void HostBuffer::memset_tensor(Tensor& t, uint8_t value, size_t offset, size_t size) {
    std::memset(static_cast<std::byte*>(t.data) + offset, value, size);
}

bool HostBuffer::copy_tensor(const Tensor& src, Tensor& dst) {
    const Buffer* src_buffer = src.view_src ? src.view_src->buffer : src.buffer;
    if (src_buffer == nullptr || !src_buffer->is_host()) return false;
    std::memcpy(dst.data, src.data, src.nbytes());
    return true;
}

void HostBuffer::clear(uint8_t value) {
    if (base_ != nullptr) std::memset(base_, value, size());
}

size_t physical_memory_bytes() {
    return static_cast<size_t>(sysconf(_SC_PHYS_PAGES)) * static_cast<size_t>(sysconf(_SC_PAGE_SIZE));
}

size_t available_memory_bytes() {
    return static_cast<size_t>(sysconf(_SC_AVPHYS_PAGES)) * static_cast<size_t>(sysconf(_SC_PAGE_SIZE));
}

Result<std::unique_ptr<Buffer>> CpuBufferType::alloc_buffer(size_t size) {
    // Refuse sizes the machine cannot have before asking the allocator: some allocators (and the
    // sanitizers' ones) abort on absurd requests instead of failing.
    if (size > physical_memory_bytes()) {
        return Status(StatusCode::OutOfMemory, "CPU: cannot allocate a buffer of " + std::to_string(size) +
                                                   " bytes: the machine has " +
                                                   std::to_string(physical_memory_bytes()) + " bytes of memory");
    }
    AlignedBytes memory(size, kAlignment);
    if (size > 0 && memory.data() == nullptr) {
        return Status(StatusCode::OutOfMemory, "CPU: cannot allocate a buffer of " + std::to_string(size) + " bytes");
    }
    return std::unique_ptr<Buffer>(std::make_unique<HostBuffer>(*this, std::move(memory)));
}

Result<std::unique_ptr<Buffer>> CpuFromPtrBufferType::alloc_buffer(size_t) {
    return Status(StatusCode::NotSupported, "CPU_Mapped buffers are made from host pointers, not allocated");
}

}  // namespace xb::cpu
