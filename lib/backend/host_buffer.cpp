#include "backend/host_buffer.hpp"

#include <cstring>

namespace xb {

Status HostMemoryBuffer::set_tensor_impl(Tensor& t, const void* data, size_t offset, size_t size) {
    std::memcpy(static_cast<std::byte*>(t.data) + offset, data, size);
    return Status::ok();
}

Status HostMemoryBuffer::get_tensor_impl(const Tensor& t, void* data, size_t offset, size_t size) {
    std::memcpy(data, static_cast<const std::byte*>(t.data) + offset, size);
    return Status::ok();
}

Status HostMemoryBuffer::memset_tensor_impl(Tensor& t, uint8_t value, size_t offset, size_t size) {
    std::memset(static_cast<std::byte*>(t.data) + offset, value, size);
    return Status::ok();
}

Result<bool> HostMemoryBuffer::copy_tensor_impl(const Tensor& src, Tensor& dst) {
    const Buffer* from = storage_buffer(src);
    if (from == nullptr || !from->is_host()) return false;
    std::memcpy(dst.data, src.data, src.nbytes());
    return true;
}

void HostMemoryBuffer::clear_impl(uint8_t value) {
    if (base_ != nullptr) std::memset(base_, value, size());
}

}  // namespace xb
