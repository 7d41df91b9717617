// ggml's memory as xbackend buffers: a buffer type and buffers that wrap a ggml device's own
// (ggml_backend_buffer_type_t, ggml_backend_buffer_t), so that xbackend's allocators place tensors
// in memory that ggml's kernels compute in, and xbackend reads and writes it through ggml's own
// tensor access (whatever the device: host memory, CUDA, Vulkan...).
#pragma once

#include <memory>
#include <string>

#include "backend/buffer.hpp"
#include "backend/buffer_type.hpp"

struct ggml_backend_buffer_type;
struct ggml_backend_buffer;

namespace xb::ggml_devices {

class GgmlBufferType final : public BufferType {
public:
    // `device` is the xbackend device that owns this type (a GgmlDevice).
    GgmlBufferType(Device& device, ggml_backend_buffer_type* buft);

    const char* name() const override { return name_.c_str(); }
    Result<std::unique_ptr<Buffer>> alloc_buffer(size_t size) override;
    size_t alignment() const override;
    size_t max_size() const override;
    // ggml's own answer for a tensor of this type, shape and strides (CUDA pads quantized rows).
    size_t alloc_size(const Tensor& t) const override;
    bool is_host() const override;
    Device& device() const override { return *device_; }

    ggml_backend_buffer_type* handle() const { return buft_; }

private:
    Device* device_;
    ggml_backend_buffer_type* buft_;
    std::string name_;  // "ggml:<ggml's buffer type name>"
};

class GgmlBuffer final : public Buffer {
public:
    // Takes ownership of `buffer` (freed with the GgmlBuffer).
    GgmlBuffer(GgmlBufferType& type, ggml_backend_buffer* buffer);
    ~GgmlBuffer() override;
    GgmlBuffer(const GgmlBuffer&) = delete;
    GgmlBuffer& operator=(const GgmlBuffer&) = delete;

    ggml_backend_buffer* handle() const { return buffer_; }

protected:
    void* base_impl() override;
    // ggml's init_tensor for the tensor's layout (CUDA clears the padding of quantized rows).
    Status init_tensor_impl(Tensor& t) override;
    Status set_tensor_impl(Tensor& t, const void* data, size_t offset, size_t size) override;
    Status get_tensor_impl(const Tensor& t, void* data, size_t offset, size_t size) override;
    Status memset_tensor_impl(Tensor& t, uint8_t value, size_t offset, size_t size) override;
    void clear_impl(uint8_t value) override;
    void reset_impl() override;

private:
    ggml_backend_buffer* buffer_;
};

// The ggml buffer holding t's bytes when they are in a buffer of `type`; nullptr otherwise.
ggml_backend_buffer* ggml_buffer_of(const Tensor& t, const GgmlBufferType& type);

}  // namespace xb::ggml_devices
