// Owned, aligned host memory (RAII): the storage of CPU buffers and of contexts that hold data.
#pragma once

#include <cstddef>
#include <memory>
#include <new>

namespace xb {

class AlignedBytes {
public:
    AlignedBytes() = default;
    // Throws nothing: check `data()` for nullptr when the allocation failed.
    AlignedBytes(size_t size, size_t alignment)
        : ptr_(size ? static_cast<std::byte*>(::operator new(size, std::align_val_t(alignment), std::nothrow))
                    : nullptr,
               Deleter{alignment}),
          size_(ptr_ ? size : 0) {}

    std::byte* data() const { return ptr_.get(); }
    size_t size() const { return size_; }

private:
    struct Deleter {
        size_t alignment = alignof(std::max_align_t);
        void operator()(std::byte* p) const { ::operator delete(p, std::align_val_t(alignment), std::nothrow); }
    };
    std::unique_ptr<std::byte, Deleter> ptr_{nullptr, Deleter{}};
    size_t size_ = 0;
};

}  // namespace xb
