// Buffer: one allocation of a BufferType (ggml_backend_buffer).
//
// Public members check their arguments once and dispatch to the *_impl virtuals that each backend
// implements. Buffers are owned by std::unique_ptr; tensors point at them without owning them.
#pragma once

#include <cstddef>
#include <cstdint>
#include <memory>
#include <vector>

#include "backend/buffer_type.hpp"
#include "core/status.hpp"
#include "core/tensor.hpp"

namespace xb {

enum class BufferUsage { Any, Weights, Compute };
const char* buffer_usage_name(BufferUsage usage);

class Buffer {
public:
    Buffer(BufferType& type, size_t size) : type_(&type), size_(size) {}
    virtual ~Buffer() = default;
    Buffer(const Buffer&) = delete;
    Buffer& operator=(const Buffer&) = delete;

    BufferType& type() const { return *type_; }
    const char* name() const { return type_->name(); }
    size_t size() const { return size_; }
    size_t alignment() const { return type_->alignment(); }
    size_t max_size() const { return type_->max_size(); }
    size_t alloc_size(const Tensor& t) const { return type_->alloc_size(t); }
    bool is_host() const { return type_->is_host(); }

    // Start of the buffer's memory as the device addresses it (not host-readable unless is_host).
    virtual void* base() = 0;

    virtual BufferUsage usage() const { return usage_; }
    virtual void set_usage(BufferUsage usage) { usage_ = usage; }

    // Prepares a tensor placed in this buffer (tensor->data and ->buffer already set).
    virtual Status init_tensor(Tensor& t) {
        (void)t;
        return Status::ok();
    }

    // Byte access to a tensor of this buffer; offset/size are relative to the tensor's data and are
    // checked by the public tensor_set/tensor_get/tensor_memset (backend/tensor_io.hpp).
    virtual void set_tensor(Tensor& t, const void* data, size_t offset, size_t size) = 0;
    virtual void get_tensor(const Tensor& t, void* data, size_t offset, size_t size) = 0;
    virtual void memset_tensor(Tensor& t, uint8_t value, size_t offset, size_t size) = 0;
    // Copies src (in any buffer) into dst (in this buffer) when this buffer knows how to do it
    // directly; false means the caller must stage through host memory.
    virtual bool copy_tensor(const Tensor& src, Tensor& dst) {
        (void)src;
        (void)dst;
        return false;
    }
    // Sets every byte of the buffer to `value`.
    virtual void clear(uint8_t value) = 0;
    // Forgets per-tensor state (ggml_backend_buffer_reset); the memory is kept.
    virtual void reset() {}

private:
    BufferType* type_;
    size_t size_;
    BufferUsage usage_ = BufferUsage::Any;
};

// Several buffers handled as one (ggml's multi-buffer), e.g. when a context needs more memory
// than one buffer of its type can hold. Tensors live in the parts; usage and clear apply to all.
class MultiBuffer final : public Buffer {
public:
    explicit MultiBuffer(std::vector<std::unique_ptr<Buffer>> parts);

    const std::vector<std::unique_ptr<Buffer>>& parts() const { return parts_; }
    void* base() override { return nullptr; }
    void set_usage(BufferUsage usage) override;
    void set_tensor(Tensor& t, const void* data, size_t offset, size_t size) override;
    void get_tensor(const Tensor& t, void* data, size_t offset, size_t size) override;
    void memset_tensor(Tensor& t, uint8_t value, size_t offset, size_t size) override;
    void clear(uint8_t value) override;
    void reset() override;

private:
    static size_t total_size(const std::vector<std::unique_ptr<Buffer>>& parts);
    std::vector<std::unique_ptr<Buffer>> parts_;
};

// True when `buffer` is a MultiBuffer.
bool is_multi_buffer(const Buffer& buffer);

}  // namespace xb
