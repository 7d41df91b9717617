#include "core/context.hpp"

#include "core/size_math.hpp"

namespace xb {

Context::Context(ContextParams params) : params_(params) {}

Tensor* Context::new_tensor_impl(DType type, const std::array<int64_t, kMaxDims>& ne, Tensor* view_src,
                                 size_t view_offs) {
    // The view chain always points at the root that owns storage, as in ggml.
    if (view_src != nullptr && view_src->is_view()) {
        view_offs += view_src->view_offs;
        view_src = view_src->view_src;
    }
    Tensor& t = tensors_.emplace_back();
    t.type = type;
    t.ne = ne;
    t.nb = contiguous_strides(type, ne);
    t.view_src = view_src;
    t.view_offs = view_offs;
    t.ctx = this;
    if (view_src != nullptr) {
        t.buffer = view_src->buffer;
        if (view_src->data != nullptr) t.data = static_cast<std::byte*>(view_src->data) + view_offs;
    } else if (params_.alloc_data) {
        const size_t bytes = t.nbytes();
        if (bytes > 0) {
            storage_.emplace_back(bytes, params_.data_alignment);
            if (storage_.back().data() == nullptr) {
                fail(Status(StatusCode::OutOfMemory, "context: cannot allocate " + std::to_string(bytes) +
                                                         " bytes of tensor data"));
            }
            t.data = storage_.back().data();
        }
    }
    return &t;
}

Tensor* Context::new_tensor(DType type, std::span<const int64_t> ne) {
    std::array<int64_t, kMaxDims> dims{1, 1, 1, 1};
    if (ne.empty() || ne.size() > kMaxDims) {
        return fail(Status(StatusCode::InvalidArgument,
                           "new_tensor: expected 1 to 4 dims, got " + std::to_string(ne.size())));
    }
    for (size_t i = 0; i < ne.size(); ++i) {
        if (ne[i] < 0) {
            return fail(Status(StatusCode::InvalidArgument,
                               "new_tensor: dim " + std::to_string(i) + " is negative (" + std::to_string(ne[i]) + ")"));
        }
        dims[i] = ne[i];
    }
    if (const std::optional<uint64_t> bytes = checked_nbytes(type, dims); !bytes || *bytes > kMaxTensorBytes) {
        std::string shape;
        for (size_t i = 0; i < ne.size(); ++i) shape += (i ? ", " : "") + std::to_string(ne[i]);
        return fail(Status(StatusCode::InvalidArgument, "new_tensor: shape [" + shape + "] of " + dtype_name(type) + " needs " +
                                                            approximate_bytes_text(type, dims) + ", more than the " +
                                                            bytes_text(static_cast<double>(kMaxTensorBytes)) + " a tensor may have"));
    }
    if (dims[0] % blck_size(type) != 0) {
        return fail(Status(StatusCode::InvalidArgument, std::string("new_tensor: ") + dtype_name(type) +
                                                            " rows are blocks of " + std::to_string(blck_size(type)) +
                                                            " values: ne[0] = " + std::to_string(dims[0]) +
                                                            " is not a multiple"));
    }
    return new_tensor_impl(type, dims, nullptr, 0);
}


Tensor* Context::dup_tensor_layout(const Tensor& t) {
    Tensor* d = new_tensor_impl(t.type, t.ne, nullptr, 0);
    d->nb = t.nb;
    return d;
}

Tensor* Context::new_view(Tensor& src, const std::array<int64_t, kMaxDims>& ne, const std::array<size_t, kMaxDims>& nb,
                          size_t offset) {
    Tensor* v = new_tensor_impl(src.type, ne, &src, offset);
    v->nb = nb;
    return v;
}

Tensor* Context::find(std::string_view name) {
    for (Tensor& t : tensors_) {
        if (t.name == name) return &t;
    }
    return nullptr;
}

Tensor* Context::fail(Status error, const Tensor* shape_like) {
    XB_CHECK_MSG(!error.is_ok(), "Context::fail needs an error status");
    if (status_.is_ok()) status_ = std::move(error);
    return placeholder(shape_like);
}

Tensor* Context::placeholder(const Tensor* shape_like) {
    XB_CHECK_MSG(!status_.is_ok(), "a placeholder tensor stands for a recorded error");
    // The placeholder must not allocate or recurse into fail(); it is never computed.
    Tensor& t = tensors_.emplace_back();
    if (shape_like != nullptr) {
        t.type = shape_like->type;
        t.ne = shape_like->ne;
    }
    t.nb = contiguous_strides(t.type, t.ne);
    t.ctx = this;
    t.name = "<error>";
    return &t;
}

}  // namespace xb
