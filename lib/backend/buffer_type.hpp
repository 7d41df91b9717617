// BufferType: how a device makes memory (ggml_backend_buffer_type).
//
// Contract for a backend author:
//   - Ownership: buffer types are owned by their Device and live as long as the registry;
//     everything else refers to them by reference. The buffers they make belong to the caller.
//   - Thread safety: every member may be called from any thread; alloc_buffer too (allocators and
//     tools allocate while streams run), so a type that counts its device's memory does it under a
//     lock.
//   - The queries are constant for the type's life: the graph allocator plans with alignment,
//     max_size and alloc_size before it allocates.
//   - Optional members have their documented default as the body of the virtual.
#pragma once

#include <cstddef>
#include <cstdint>
#include <memory>

#include "core/status.hpp"
#include "core/tensor.hpp"

namespace xb {

class Buffer;
class Device;

class BufferType {
public:
    virtual ~BufferType() = default;

    virtual const char* name() const = 0;
    // A new buffer of `size` bytes (0 is allowed: an empty buffer); OutOfMemory naming the type and
    // the size when the device cannot provide it. Never more than max_size() is asked for.
    virtual Result<std::unique_ptr<Buffer>> alloc_buffer(size_t size) = 0;
    // Alignment of every tensor placed in a buffer of this type.
    virtual size_t alignment() const = 0;
    // The largest single buffer this type can allocate.
    virtual size_t max_size() const { return SIZE_MAX; }
    // Bytes a tensor occupies in a buffer of this type (kernels may need padding).
    virtual size_t alloc_size(const Tensor& t) const { return t.nbytes(); }
    // The host can read and write the memory directly through tensor->data.
    virtual bool is_host() const { return false; }
    // Host memory locked in RAM for a device's transfers (a GPU's host buffer type): copies between
    // it and the device run at the link's full speed and can be asynchronous, where pageable host
    // memory is staged by the driver at a fraction of it. Only host memory is pinned.
    virtual bool is_pinned() const { return false; }
    // Its buffers hold no bytes themselves: each tensor's bytes go to buffers of other types when
    // it is initialised (a row split), which check their own devices' memory.
    virtual bool is_virtual() const { return false; }
    // Whether t placed here is stored in another layout than its own (a repacked weight type's
    // tensors it converts; Buffer::stored_layout says when); false for plain memory.
    virtual bool repacks(const Tensor&) const { return false; }
    // The device whose memory this is.
    virtual Device& device() const = 0;
};

}  // namespace xb
