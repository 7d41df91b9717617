#include "alloc/linear_allocator.hpp"

#include <string>

#include "backend/tensor_io.hpp"

namespace xb {

LinearAllocator::LinearAllocator(Buffer& buffer)
    : buffer_(&buffer), alignment_(buffer.alignment()), offset_(0) {
    // The base may itself be unaligned (buffers over host pointers): start at the first aligned byte.
    const auto base = reinterpret_cast<uintptr_t>(buffer.base());
    offset_ = align_up(base, alignment_) - base;
}

Status LinearAllocator::alloc(Tensor& t) {
    const size_t size = buffer_->alloc_size(t);
    if (offset_ > buffer_->size() || size > buffer_->size() - offset_) {
        return Status(StatusCode::OutOfMemory, "linear allocator: not enough space in buffer " +
                                                   std::string(buffer_->name()) + " for '" + t.display_name() +
                                                   "' (needed " + std::to_string(size) + " bytes, available " +
                                                   std::to_string(offset_ > buffer_->size() ? 0 : buffer_->size() - offset_) +
                                                   " of " + std::to_string(buffer_->size()) + ")");
    }
    void* addr = static_cast<std::byte*>(buffer_->base()) + offset_;
    offset_ = align_up(offset_ + size, alignment_);
    return tensor_alloc(*buffer_, t, addr);
}

}  // namespace xb
