// Reserved address ranges the host cannot touch: the device addresses of memory that is not the
// host's (the simulated devices', the F64 device's). Tensors point into such a range; the bytes live
// elsewhere, reached only through the buffer's own set/get/copy and the device's kernels, so a host
// dereference of a device address faults, as it would on a discrete GPU.
#pragma once

#include <cstddef>

namespace xb {

// Reserved, inaccessible virtual addresses (RAII over mmap(PROT_NONE)). No memory is committed.
class AddressRange {
public:
    AddressRange() = default;
    // `size` rounded up to whole pages (at least one). Check `base()` for nullptr on failure.
    explicit AddressRange(size_t size);
    ~AddressRange();
    AddressRange(AddressRange&& other) noexcept;
    AddressRange& operator=(AddressRange&& other) noexcept;

    std::byte* base() const { return base_; }
    size_t size() const { return size_; }  // bytes reserved (page multiple)

private:
    void release();

    std::byte* base_ = nullptr;
    size_t size_ = 0;
};

}  // namespace xb
