// LinearAllocator: places tensors one after another in a buffer, each at the buffer's alignment
// (ggml_tallocr). Used for weights and other tensors that live as long as their buffer.
#pragma once

#include <cstddef>

#include "backend/buffer.hpp"
#include "core/status.hpp"
#include "core/tensor.hpp"

namespace xb {

class LinearAllocator {
public:
    explicit LinearAllocator(Buffer& buffer);

    // Places t at the next aligned offset; OutOfMemory (with sizes) when it does not fit.
    Status alloc(Tensor& t);
    size_t offset() const { return offset_; }
    Buffer& buffer() const { return *buffer_; }

private:
    Buffer* buffer_;
    size_t alignment_;
    size_t offset_;
};

// Rounds `offset` up to a multiple of `alignment` (a power of two).
constexpr size_t align_up(size_t offset, size_t alignment) { return (offset + alignment - 1) & ~(alignment - 1); }

}  // namespace xb
