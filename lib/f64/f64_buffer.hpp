// The F64 device's memory. Tensors keep their declared types, shapes and strides (the allocators
// and the scheduler plan with them as on any device), but an f32 value is held as the double it
// really is, so that nothing rounds between exact nodes.
//
// A buffer has two halves, as the simulated device's: an address range reserved with PROT_NONE
// (tensor->data points there; a host dereference faults, the device is not host memory) and wide
// storage of twice the buffer's size. The element or block at declared byte offset p lives at
// wide offset 2p: an f32 element as a double (8 bytes, twice its 4), every other type (f16, bf16,
// integers, a quantized block) as its own bytes, which are exact as they stand. Views, in-place
// reuse and strides then work unchanged: any declared address maps to its wide place.
//
// Byte access (set/get/memset) takes any byte range of the raw types; an f32 range must hold whole
// elements, which are converted (InvalidArgument otherwise). get rounds doubles to f32: what a host
// reads of an F64 tensor is its f32 value, as of every device.
#pragma once

#include <cstddef>
#include <memory>

#include "backend/address_range.hpp"
#include "backend/buffer.hpp"
#include "backend/buffer_type.hpp"
#include "core/aligned_bytes.hpp"

namespace xb::f64 {

class F64Device;

class F64BufferType final : public BufferType {
public:
    explicit F64BufferType(F64Device& device) : device_(&device) {}

    const char* name() const override { return "F64"; }
    // OutOfMemory when the host cannot give twice `size` (the wide storage).
    Result<std::unique_ptr<Buffer>> alloc_buffer(size_t size) override;
    size_t alignment() const override { return kAlignment; }
    Device& device() const override;

    static constexpr size_t kAlignment = 64;

private:
    F64Device* device_;
};

class F64Buffer final : public Buffer {
public:
    F64Buffer(F64BufferType& type, size_t size, AddressRange addresses, AlignedBytes storage);

    // The wide storage of declared address `addr` (inside this buffer).
    std::byte* wide(const void* addr) const;
    bool contains(const void* addr) const;

protected:
    void* base_impl() override { return addresses_.base(); }
    Status set_tensor_impl(Tensor& t, const void* data, size_t offset, size_t size) override;
    Status get_tensor_impl(const Tensor& t, void* data, size_t offset, size_t size) override;
    Status memset_tensor_impl(Tensor& t, uint8_t value, size_t offset, size_t size) override;
    // From another F64 buffer: the wide bytes as they are; false for other memory.
    Result<bool> copy_tensor_impl(const Tensor& src, Tensor& dst) override;
    void clear_impl(uint8_t value) override;

private:
    AddressRange addresses_;
    AlignedBytes storage_;
};

// The F64 buffer holding t's bytes (through its view source), or nullptr when t is not in F64 memory.
F64Buffer* f64_storage(const Tensor& t);

}  // namespace xb::f64
