#include "ggml_devices/ggml_buffer.hpp"

#include <ggml-backend.h>
#include <ggml.h>

#include <algorithm>
#include <optional>
#include <vector>

#include "backend/device.hpp"
#include "ggml_devices/ggml_types.hpp"

namespace xb::ggml_devices {

namespace {

// A ggml tensor header for bytes [0, n) at `data` in `buffer`: ggml's tensor access takes a tensor
// and a byte range inside it, and this one spans exactly the xbackend tensor's bytes.
ggml_tensor byte_span(ggml_backend_buffer* buffer, void* data, size_t n) {
    ggml_tensor g{};
    g.type = GGML_TYPE_I8;
    g.ne[0] = static_cast<int64_t>(n);
    g.ne[1] = g.ne[2] = g.ne[3] = 1;
    g.nb[0] = 1;
    g.nb[1] = g.nb[2] = g.nb[3] = n;
    g.buffer = buffer;
    g.data = data;
    return g;
}

// A ggml tensor header of t's type, shape and strides (no memory): for ggml's size and init queries.
std::optional<ggml_tensor> layout_of(const Tensor& t) {
    const std::optional<ggml_type> type = ggml_type_of(t.type);
    if (!type) return std::nullopt;
    ggml_tensor g{};
    g.type = *type;
    std::copy(t.ne.begin(), t.ne.end(), g.ne);
    std::copy(t.nb.begin(), t.nb.end(), g.nb);
    return g;
}

}  // namespace

GgmlBufferType::GgmlBufferType(Device& device, ggml_backend_buffer_type* buft)
    : device_(&device), buft_(buft), name_(std::string("ggml:") + ggml_backend_buft_name(buft)) {}

Result<std::unique_ptr<Buffer>> GgmlBufferType::alloc_buffer(size_t size) {
    // A size the device cannot hold is refused here, before ggml asks the allocator for it.
    XB_RETURN_IF_ERROR(check_buffer_type_memory(*this, size, name_ + " buffer"));
    ggml_backend_buffer* buffer = ggml_backend_buft_alloc_buffer(buft_, size);
    if (buffer == nullptr) {
        return Status(StatusCode::OutOfMemory, name_ + ": ggml could not allocate a buffer of " + std::to_string(size) + " bytes");
    }
    return std::unique_ptr<Buffer>(std::make_unique<GgmlBuffer>(*this, buffer));
}

size_t GgmlBufferType::alignment() const { return ggml_backend_buft_get_alignment(buft_); }

size_t GgmlBufferType::max_size() const { return ggml_backend_buft_get_max_size(buft_); }

size_t GgmlBufferType::alloc_size(const Tensor& t) const {
    const std::optional<ggml_tensor> g = layout_of(t);
    return g ? ggml_backend_buft_get_alloc_size(buft_, &*g) : t.nbytes();
}

bool GgmlBufferType::is_host() const { return ggml_backend_buft_is_host(buft_); }

GgmlBuffer::GgmlBuffer(GgmlBufferType& type, ggml_backend_buffer* buffer)
    : Buffer(type, ggml_backend_buffer_get_size(buffer)), buffer_(buffer) {}

GgmlBuffer::~GgmlBuffer() { ggml_backend_buffer_free(buffer_); }

void* GgmlBuffer::base_impl() { return ggml_backend_buffer_get_base(buffer_); }

Status GgmlBuffer::init_tensor_impl(Tensor& t) {
    if (t.is_view()) return Status::ok();  // ggml initialises a view's source, not the view
    std::optional<ggml_tensor> g = layout_of(t);
    if (!g) return Status(StatusCode::NotSupported, std::string(name()) + ": ggml has no type " + dtype_name(t.type));
    g->buffer = buffer_;
    g->data = t.data;
    if (ggml_backend_buffer_init_tensor(buffer_, &*g) != GGML_STATUS_SUCCESS) {
        return Status(StatusCode::Internal, std::string(name()) + ": ggml could not initialise tensor '" + t.display_name() + "'");
    }
    return Status::ok();
}

Status GgmlBuffer::set_tensor_impl(Tensor& t, const void* data, size_t offset, size_t size) {
    ggml_tensor g = byte_span(buffer_, t.data, t.nbytes());
    ggml_backend_tensor_set(&g, data, offset, size);
    return Status::ok();
}

Status GgmlBuffer::get_tensor_impl(const Tensor& t, void* data, size_t offset, size_t size) {
    const ggml_tensor g = byte_span(buffer_, t.data, t.nbytes());
    ggml_backend_tensor_get(&g, data, offset, size);
    return Status::ok();
}

Status GgmlBuffer::memset_tensor_impl(Tensor& t, uint8_t value, size_t offset, size_t size) {
    // Through set_tensor, which every ggml buffer has (memset_tensor is optional in ggml's interface).
    constexpr size_t kChunk = size_t{1} << 20;
    const std::vector<uint8_t> bytes(std::min(size, kChunk), value);
    for (size_t done = 0; done < size; done += kChunk) {
        XB_RETURN_IF_ERROR(set_tensor_impl(t, bytes.data(), offset + done, std::min(kChunk, size - done)));
    }
    return Status::ok();
}

void GgmlBuffer::clear_impl(uint8_t value) { ggml_backend_buffer_clear(buffer_, value); }

void GgmlBuffer::reset_impl() { ggml_backend_buffer_reset(buffer_); }

ggml_backend_buffer* ggml_buffer_of(const Tensor& t, const GgmlBufferType& type) {
    auto* buffer = dynamic_cast<GgmlBuffer*>(storage_buffer(t));
    return buffer == nullptr || &buffer->type() != &type ? nullptr : buffer->handle();
}

}  // namespace xb::ggml_devices
