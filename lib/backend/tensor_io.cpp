#include "backend/tensor_io.hpp"

#include <atomic>
#include <cstring>
#include <string>

namespace xb {

namespace {

// The buffer of t, or an error when t is not allocated.
Result<Buffer*> buffer_of(const Tensor& t, const char* what) {
    Buffer* buffer = storage_buffer(t);
    if (buffer == nullptr || t.data == nullptr) {
        return Status(StatusCode::InvalidArgument, std::string(what) + ": tensor '" + t.display_name() +
                                                       "' is not allocated in a buffer");
    }
    return buffer;
}

}  // namespace

Status tensor_set(Tensor& t, const void* data, size_t offset, size_t size) {
    if (size == 0) return Status::ok();
    XB_ASSIGN_OR_RETURN(Buffer * buffer, buffer_of(t, "tensor_set"));
    return buffer->set_tensor(t, data, offset, size);
}

Status tensor_get(const Tensor& t, void* data, size_t offset, size_t size) {
    if (size == 0) return Status::ok();
    XB_ASSIGN_OR_RETURN(Buffer * buffer, buffer_of(t, "tensor_get"));
    return buffer->get_tensor(t, data, offset, size);
}

Status tensor_memset(Tensor& t, uint8_t value, size_t offset, size_t size) {
    if (size == 0) return Status::ok();
    XB_ASSIGN_OR_RETURN(Buffer * buffer, buffer_of(t, "tensor_memset"));
    return buffer->memset_tensor(t, value, offset, size);
}

Status tensor_copy(const Tensor& src, Tensor& dst) {
    if (!same_layout(src, dst)) {
        return Status(StatusCode::InvalidArgument, "tensor_copy: '" + src.display_name() + "' " + src.shape_string() +
                                                       " and '" + dst.display_name() + "' " + dst.shape_string() +
                                                       " have different layouts");
    }
    if (&src == &dst) return Status::ok();
    const size_t nbytes = src.nbytes();
    XB_ASSIGN_OR_RETURN(Buffer * src_buf, buffer_of(src, "tensor_copy"));
    XB_ASSIGN_OR_RETURN(Buffer * dst_buf, buffer_of(dst, "tensor_copy"));
    if (src_buf->is_host()) {
        XB_RETURN_IF_ERROR(check_tensor_range(src, 0, nbytes, "tensor_copy"));
        return dst_buf->set_tensor(dst, src.data, 0, nbytes);
    }
    if (dst_buf->is_host()) {
        XB_RETURN_IF_ERROR(check_tensor_range(dst, 0, nbytes, "tensor_copy"));
        return src_buf->get_tensor(src, dst.data, 0, nbytes);
    }
    XB_ASSIGN_OR_RETURN(const bool direct, dst_buf->copy_tensor(src, dst));
    if (direct) return Status::ok();
    // Neither side is host memory and there is no direct path: stage through the host.
    std::vector<std::byte> staging(nbytes);
    XB_RETURN_IF_ERROR(tensor_get(src, staging.data(), 0, nbytes));
    return tensor_set(dst, staging.data(), 0, nbytes);
}

Status tensor_set_async(Backend& backend, Tensor& t, const void* data, size_t offset, size_t size) {
    if (size == 0) return Status::ok();
    XB_RETURN_IF_ERROR(check_tensor_range(t, offset, size, "tensor_set_async"));
    return backend.set_tensor_async(t, data, offset, size);
}

Status tensor_get_async(Backend& backend, const Tensor& t, void* data, size_t offset, size_t size) {
    if (size == 0) return Status::ok();
    XB_RETURN_IF_ERROR(check_tensor_range(t, offset, size, "tensor_get_async"));
    return backend.get_tensor_async(t, data, offset, size);
}

Status tensor_copy_async(Backend& src_backend, Backend& dst_backend, const Tensor& src, Tensor& dst) {
    if (!same_layout(src, dst)) {
        return Status(StatusCode::InvalidArgument, "tensor_copy_async: '" + src.display_name() + "' and '" +
                                                       dst.display_name() + "' have different layouts");
    }
    if (&src == &dst) return Status::ok();
    if (dst_backend.cpy_tensor_async(src_backend, src, dst)) return Status::ok();
    // An async copy would start after the work queued on both backends: emulate that ordering.
    src_backend.synchronize();
    dst_backend.synchronize();
    return tensor_copy(src, dst);
}

Status tensor_alloc(Buffer& buffer, Tensor& t, void* addr) {
    if (t.buffer != nullptr || t.data != nullptr) {
        return Status(StatusCode::InvalidArgument, "tensor_alloc: '" + t.display_name() + "' is already allocated");
    }
    auto* base = static_cast<std::byte*>(buffer.base());
    auto* at = static_cast<std::byte*>(addr);
    const size_t need = buffer.alloc_size(t);
    if (base == nullptr || at < base || static_cast<size_t>(at - base) > buffer.size() ||
        need > buffer.size() - static_cast<size_t>(at - base)) {
        return Status(StatusCode::OutOfRange, "tensor_alloc: '" + t.display_name() + "' (" + std::to_string(need) +
                                                  " bytes) does not fit in buffer " + buffer.name() + " of " +
                                                  std::to_string(buffer.size()) + " bytes at that address");
    }
    t.buffer = &buffer;
    t.data = addr;
    return buffer.init_tensor(t);
}

Status view_init(Tensor& t) {
    if (!t.is_view() || t.view_src->buffer == nullptr || t.view_src->data == nullptr) {
        return Status(StatusCode::InvalidArgument, "view_init: the source of view '" + t.display_name() +
                                                       "' is not allocated");
    }
    t.buffer = t.view_src->buffer;
    t.data = static_cast<std::byte*>(t.view_src->data) + t.view_offs;
    return t.buffer->init_tensor(t);
}

namespace {

// Types whose values convert to and from f32: element by element or a block at a time.
bool f32_convertible(DType t) { return is_float_type(t) || is_quantized(t); }

// Below this many elements a conversion is quicker than starting the OpenMP team.
constexpr int64_t kParallelConversionElements = 1 << 16;

// One value per element of a contiguous tensor of a type f32 converts to.
Status check_f32_values(const Tensor& t, std::span<const float> values) {
    if (static_cast<int64_t>(values.size()) != t.nelements() || !t.is_contiguous() || !f32_convertible(t.type)) {
        return Status(StatusCode::InvalidArgument, "tensor_set_f32: '" + t.display_name() + "' " + t.shape_string() +
                                                       " needs " + std::to_string(t.nelements()) +
                                                       " values and a contiguous float layout");
    }
    return Status::ok();
}

}  // namespace

Result<std::vector<std::byte>> f32_to_tensor_bytes(const Tensor& t, std::span<const float> values) {
    XB_RETURN_IF_ERROR(check_f32_values(t, values));
    std::vector<std::byte> converted(t.nbytes());
    if (t.type == DType::F32) {
        std::memcpy(converted.data(), values.data(), values.size_bytes());
        return converted;
    }
    // Row by row, so that a quantized row whose length is not a whole number of blocks is refused.
    // The rows are quantized in parallel: a 4096 x 4096 q4_K weight takes seconds on one core.
    const size_t row_bytes = t.row_bytes();
    const int64_t rows = t.nrows();
    std::atomic<bool> refused{false};
#pragma omp parallel for schedule(dynamic, 64) if (t.nelements() >= kParallelConversionElements)
    for (int64_t r = 0; r < rows; ++r) {
        if (!convert_row(DType::F32, values.data() + r * t.ne[0], t.type, converted.data() + r * row_bytes, t.ne[0])) {
            refused.store(true, std::memory_order_relaxed);
        }
    }
    if (refused.load()) {
        return Status(StatusCode::NotSupported, "tensor_set_f32: cannot convert to " + std::string(dtype_name(t.type)));
    }
    return converted;
}

Status tensor_set_f32(Tensor& t, std::span<const float> values) {
    if (t.type == DType::F32) {
        XB_RETURN_IF_ERROR(check_f32_values(t, values));
        return tensor_set(t, values.data(), 0, values.size_bytes());  // no copy
    }
    XB_ASSIGN_OR_RETURN(std::vector<std::byte> converted, f32_to_tensor_bytes(t, values));
    return tensor_set(t, converted.data(), 0, converted.size());
}

Result<std::vector<float>> tensor_get_f32(const Tensor& t) {
    if (!f32_convertible(t.type) && t.type != DType::I32) {
        return Status(StatusCode::NotSupported, std::string("tensor_get_f32: cannot read ") + dtype_name(t.type));
    }
    std::vector<std::byte> raw(t.nbytes());
    XB_RETURN_IF_ERROR(tensor_get(t, raw.data(), 0, raw.size()));
    std::vector<float> out(static_cast<size_t>(t.nelements()));
    float* dst = out.data();
    for (int64_t i3 = 0; i3 < t.ne[3]; ++i3)
        for (int64_t i2 = 0; i2 < t.ne[2]; ++i2)
            for (int64_t i1 = 0; i1 < t.ne[1]; ++i1) {
                const std::byte* row = raw.data() + i1 * t.nb[1] + i2 * t.nb[2] + i3 * t.nb[3];
                if (is_quantized(t.type)) {
                    // Quantized rows are whole blocks, contiguous within the row.
                    if (!convert_row(t.type, row, DType::F32, dst, t.ne[0])) {
                        return Status(StatusCode::NotSupported,
                                      std::string("tensor_get_f32: cannot read ") + dtype_name(t.type));
                    }
                    dst += t.ne[0];
                    continue;
                }
                for (int64_t i0 = 0; i0 < t.ne[0]; ++i0) *dst++ = load_as_f32(t.type, row + i0 * t.nb[0]);
            }
    return out;
}

}  // namespace xb
