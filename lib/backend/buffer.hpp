// Buffer: one allocation of a BufferType (ggml_backend_buffer).
//
// Contract for a backend author:
//   - The public members check their arguments once: byte access takes a tensor that lives in this
//     buffer (itself or through its view source) and a byte range inside it, else it returns
//     InvalidArgument or OutOfRange. Each backend implements the protected *_impl hooks, which may
//     assume checked arguments and return errors of their own (a device's copy failing).
//   - Ownership: buffers are owned by std::unique_ptr (the allocators' and the tools'); tensors
//     point at them without owning them, and must not be used after their buffer is gone.
//   - Synchronous: the byte access members have completed when they return (the asynchronous
//     transfers are the Backend's). A device with queued work reads or writes after it, in order.
//   - Thread safety: different tensors of one buffer may be accessed from different threads at
//     once (a stream worker and the host thread); the same bytes need the caller's ordering
//     (events, synchronize).
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

// How a tensor's bytes lie in its buffer: as the tensor's own layout, or (the CPU's repacked weight
// buffer type) q4_K rows interleaved 8 at a time (core/q4k_x8.hpp), which only kernels that know
// the layout read; byte access through the buffer always sees the tensor's own layout.
enum class StoredLayout { Plain, Q4KRows8 };
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
    void* base() { return base_impl(); }

    BufferUsage usage() const { return usage_; }
    void set_usage(BufferUsage usage) { usage_ = usage; }

    // Prepares a tensor placed in this buffer (t.data and t.buffer already set).
    [[nodiscard]] Status init_tensor(Tensor& t);

    // Byte access to [offset, offset + size) of tensor t's bytes.
    [[nodiscard]] Status set_tensor(Tensor& t, const void* data, size_t offset, size_t size);
    [[nodiscard]] Status get_tensor(const Tensor& t, void* data, size_t offset, size_t size);
    [[nodiscard]] Status memset_tensor(Tensor& t, uint8_t value, size_t offset, size_t size);
    // Copies all of src (in any buffer, same layout) into dst (in this buffer) when this buffer knows
    // a direct way; false means the caller must stage through host memory.
    [[nodiscard]] Result<bool> copy_tensor(const Tensor& src, Tensor& dst);
    // Sets every byte of the buffer to `value`.
    void clear(uint8_t value) { clear_impl(value); }
    // Forgets per-tensor state (ggml_backend_buffer_reset); the memory is kept.
    void reset() { reset_impl(); }
    // How t's bytes lie in this buffer's memory (t in this buffer).
    StoredLayout stored_layout(const Tensor& t) const { return stored_layout_impl(t); }

protected:
    virtual void* base_impl() = 0;
    // Default: nothing to prepare.
    virtual Status init_tensor_impl(Tensor& t);
    virtual Status set_tensor_impl(Tensor& t, const void* data, size_t offset, size_t size) = 0;
    virtual Status get_tensor_impl(const Tensor& t, void* data, size_t offset, size_t size) = 0;
    virtual Status memset_tensor_impl(Tensor& t, uint8_t value, size_t offset, size_t size) = 0;
    // Default: no direct way.
    virtual Result<bool> copy_tensor_impl(const Tensor& src, Tensor& dst);
    virtual void clear_impl(uint8_t value) = 0;
    // Default: no per-tensor state.
    virtual void reset_impl() {}
    // Default: every tensor as its own layout.
    virtual StoredLayout stored_layout_impl(const Tensor&) const { return StoredLayout::Plain; }

private:
    BufferType* type_;
    size_t size_;
    BufferUsage usage_ = BufferUsage::Any;
};

// The buffer that holds t's bytes (its view source's buffer for views); nullptr when unallocated.
Buffer* storage_buffer(const Tensor& t);

// Ok when t is allocated and [offset, offset + size) lies inside its bytes; `what` names the caller
// in the error.
[[nodiscard]] Status check_tensor_range(const Tensor& t, size_t offset, size_t size, const char* what);

// Several buffers holding one set of tensors (ggml's multi-buffer), for when they need more memory
// than one buffer of their type can hold. Not a Buffer: its tensors live in the parts, and usage,
// clear and reset apply to all of them.
class MultiBuffer {
public:
    explicit MultiBuffer(std::vector<std::unique_ptr<Buffer>> parts) : parts_(std::move(parts)) {}

    const std::vector<std::unique_ptr<Buffer>>& parts() const { return parts_; }
    bool empty() const { return parts_.empty(); }
    // Bytes of all parts together.
    size_t size() const;
    void set_usage(BufferUsage usage);
    void clear(uint8_t value);
    void reset();

private:
    std::vector<std::unique_ptr<Buffer>> parts_;
};

}  // namespace xb
