// The F64 device's memory. Tensors keep their declared types, shapes and strides (the allocators
// and the scheduler plan with them as on any device), but an f32 value is held as the double it
// really is, so that nothing rounds between exact nodes.
//
// A buffer has three parts: an address range reserved with PROT_NONE (tensor->data points there; a
// host dereference faults: the device is not host memory, as the simulated devices' are not), wide
// storage of twice the buffer's size where the f32 element at declared offset p lives as a double at
// 2p, and narrow storage of the buffer's size where every other type (f16, bf16, integers, quantized
// blocks, all exact as they stand) keeps its bytes at p. Views, in-place reuse and strides then work
// unchanged: a declared address maps to its place in the storage of its tensor's type. Pages are
// committed as they are first written, so a buffer of quantized weights costs their bytes, and one
// of f32 activations twice theirs.
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
    // OutOfMemory when the host has less than twice `size` available (an all-f32 buffer's need).
    Result<std::unique_ptr<Buffer>> alloc_buffer(size_t size) override;
    size_t alignment() const override { return kAlignment; }
    Device& device() const override;

    static constexpr size_t kAlignment = 64;

private:
    F64Device* device_;
};

class F64Buffer final : public Buffer {
public:
    F64Buffer(F64BufferType& type, size_t size, AddressRange addresses, AlignedBytes wide, AlignedBytes narrow);

    // Where the element of `type` at declared address `addr` (inside this buffer) lives: a double at
    // wide offset 2p for F32, its own bytes at narrow offset p for every other type.
    std::byte* place(const void* addr, DType type) const;
    // The distance between two elements `stride` declared bytes apart, in the storage of `type`.
    static size_t stride(size_t declared, DType type) { return type == DType::F32 ? 2 * declared : declared; }
    bool contains(const void* addr) const;

protected:
    void* base_impl() override { return addresses_.base(); }
    Status set_tensor_impl(Tensor& t, const void* data, size_t offset, size_t size) override;
    Status get_tensor_impl(const Tensor& t, void* data, size_t offset, size_t size) override;
    Status memset_tensor_impl(Tensor& t, uint8_t value, size_t offset, size_t size) override;
    // From another F64 buffer: the stored bytes as they are; false for other memory.
    Result<bool> copy_tensor_impl(const Tensor& src, Tensor& dst) override;
    void clear_impl(uint8_t value) override;

private:
    AddressRange addresses_;
    AlignedBytes wide_;    // 2 x size: f32 values as doubles
    AlignedBytes narrow_;  // size: every other type's bytes
};

// The F64 buffer holding t's bytes (through its view source), or nullptr when t is not in F64 memory.
F64Buffer* f64_storage(const Tensor& t);

}  // namespace xb::f64
