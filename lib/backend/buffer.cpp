#include "backend/buffer.hpp"

#include <string>

namespace xb {

const char* buffer_usage_name(BufferUsage usage) {
    switch (usage) {
        case BufferUsage::Any: return "any";
        case BufferUsage::Weights: return "weights";
        case BufferUsage::Compute: return "compute";
    }
    return "unknown";
}

Buffer* storage_buffer(const Tensor& t) { return t.view_src ? t.view_src->buffer : t.buffer; }

Status check_tensor_range(const Tensor& t, size_t offset, size_t size, const char* what) {
    if (storage_buffer(t) == nullptr || t.data == nullptr) {
        return Status(StatusCode::InvalidArgument, std::string(what) + ": tensor '" + t.display_name() +
                                                       "' is not allocated in a buffer");
    }
    const size_t nbytes = t.nbytes();
    if (offset > nbytes || size > nbytes - offset) {
        return Status(StatusCode::OutOfRange, std::string(what) + ": bytes [" + std::to_string(offset) + ", " +
                                                  std::to_string(offset + size) + ") are outside tensor '" +
                                                  t.display_name() + "' of " + std::to_string(nbytes) + " bytes");
    }
    return Status::ok();
}

namespace {

// The checks every byte access starts with: in range, and in this buffer.
Status check_access(const Buffer& buffer, const Tensor& t, size_t offset, size_t size, const char* what) {
    XB_RETURN_IF_ERROR(check_tensor_range(t, offset, size, what));
    if (storage_buffer(t) != &buffer) {
        return Status(StatusCode::InvalidArgument, std::string(what) + ": tensor '" + t.display_name() +
                                                       "' is not in buffer " + buffer.name());
    }
    return Status::ok();
}

}  // namespace

Status Buffer::init_tensor(Tensor& t) {
    if (storage_buffer(t) != this || t.data == nullptr) {
        return Status(StatusCode::InvalidArgument, "init_tensor: tensor '" + t.display_name() + "' is not placed in buffer " +
                                                       name());
    }
    return init_tensor_impl(t);
}

Status Buffer::set_tensor(Tensor& t, const void* data, size_t offset, size_t size) {
    if (size == 0) return Status::ok();
    XB_RETURN_IF_ERROR(check_access(*this, t, offset, size, "tensor_set"));
    return set_tensor_impl(t, data, offset, size);
}

Status Buffer::get_tensor(const Tensor& t, void* data, size_t offset, size_t size) {
    if (size == 0) return Status::ok();
    XB_RETURN_IF_ERROR(check_access(*this, t, offset, size, "tensor_get"));
    return get_tensor_impl(t, data, offset, size);
}

Status Buffer::memset_tensor(Tensor& t, uint8_t value, size_t offset, size_t size) {
    if (size == 0) return Status::ok();
    XB_RETURN_IF_ERROR(check_access(*this, t, offset, size, "tensor_memset"));
    return memset_tensor_impl(t, value, offset, size);
}

Result<bool> Buffer::copy_tensor(const Tensor& src, Tensor& dst) {
    if (!same_layout(src, dst)) {
        return Status(StatusCode::InvalidArgument, "tensor_copy: '" + src.display_name() + "' " + src.shape_string() +
                                                       " and '" + dst.display_name() + "' " + dst.shape_string() +
                                                       " have different layouts");
    }
    XB_RETURN_IF_ERROR(check_tensor_range(src, 0, src.nbytes(), "tensor_copy"));
    XB_RETURN_IF_ERROR(check_access(*this, dst, 0, dst.nbytes(), "tensor_copy"));
    return copy_tensor_impl(src, dst);
}

Status Buffer::init_tensor_impl(Tensor&) { return Status::ok(); }

Result<bool> Buffer::copy_tensor_impl(const Tensor&, Tensor&) { return false; }

size_t MultiBuffer::size() const {
    size_t total = 0;
    for (const auto& p : parts_) total += p->size();
    return total;
}

void MultiBuffer::set_usage(BufferUsage usage) {
    for (auto& p : parts_) p->set_usage(usage);
}

void MultiBuffer::clear(uint8_t value) {
    for (auto& p : parts_) p->clear(value);
}

void MultiBuffer::reset() {
    for (auto& p : parts_) p->reset();
}

}  // namespace xb
