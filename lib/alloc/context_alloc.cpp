#include "alloc/context_alloc.hpp"

#include <string>
#include <vector>

#include "alloc/linear_allocator.hpp"
#include "backend/tensor_io.hpp"
#include "core/size_math.hpp"

namespace xb {

namespace {

bool needs_memory(const Tensor& t) { return t.data == nullptr && !t.is_view(); }

// Allocates one buffer for tensors [first, last) and places those that need memory in it.
Status alloc_batch(BufferType& buft, std::span<Tensor* const> tensors, size_t first, size_t last, size_t size,
                   std::vector<std::unique_ptr<Buffer>>& out) {
    XB_ASSIGN_OR_RETURN(std::unique_ptr<Buffer> buffer, buft.alloc_buffer(size));
    LinearAllocator allocator(*buffer);
    for (size_t i = first; i < last; ++i) {
        if (needs_memory(*tensors[i])) XB_RETURN_IF_ERROR(allocator.alloc(*tensors[i]));
    }
    out.push_back(std::move(buffer));
    return Status::ok();
}

}  // namespace

Result<std::unique_ptr<MultiBuffer>> alloc_tensors(std::span<Tensor* const> tensors, BufferType& buft) {
    const size_t alignment = buft.alignment();
    const size_t max_size = buft.max_size();
    // The whole request against the device's free memory first (sizes checked: shapes come from
    // configs and model files).
    uint64_t total = 0;
    for (Tensor* t : tensors) {
        if (!needs_memory(*t)) continue;
        const std::optional<uint64_t> padded = checked_add(buft.alloc_size(*t), alignment - 1);
        const std::optional<uint64_t> sum = padded ? checked_add(total, *padded) : std::nullopt;
        total = sum.value_or(UINT64_MAX);  // saturates: still more than any device has
    }
    if (!buft.is_virtual()) XB_RETURN_IF_ERROR(check_buffer_type_memory(buft, total, std::to_string(tensors.size()) + " tensors"));
    std::vector<std::unique_ptr<Buffer>> buffers;
    size_t batch_first = 0;
    size_t batch_size = 0;
    for (size_t i = 0; i < tensors.size(); ++i) {
        if (!needs_memory(*tensors[i])) continue;
        const size_t size = align_up(buft.alloc_size(*tensors[i]), alignment);
        if (size > max_size) {
            return Status(StatusCode::InvalidArgument, "alloc_tensors: tensor '" + tensors[i]->display_name() + "' needs " +
                                                           std::to_string(size) + " bytes, more than the " +
                                                           buft.name() + " maximum buffer size " + std::to_string(max_size));
        }
        if (batch_size + size > max_size) {
            XB_RETURN_IF_ERROR(alloc_batch(buft, tensors, batch_first, i, batch_size, buffers));
            batch_first = i;
            batch_size = 0;
        }
        batch_size += size;
    }
    if (batch_size > 0) XB_RETURN_IF_ERROR(alloc_batch(buft, tensors, batch_first, tensors.size(), batch_size, buffers));

    for (Tensor* t : tensors) {
        if (t->is_view() && t->data == nullptr) XB_RETURN_IF_ERROR(view_init(*t));
    }
    return std::make_unique<MultiBuffer>(std::move(buffers));
}

Result<std::unique_ptr<MultiBuffer>> alloc_ctx_tensors(Context& ctx, BufferType& buft) {
    if (!ctx.ok()) return ctx.status();
    std::vector<Tensor*> all;
    all.reserve(ctx.tensor_count());
    for (Tensor& t : ctx.tensors()) all.push_back(&t);
    return alloc_tensors(all, buft);
}

Result<std::unique_ptr<MultiBuffer>> alloc_ctx_tensors(Context& ctx, Backend& backend) {
    return alloc_ctx_tensors(ctx, backend.default_buffer_type());
}

}  // namespace xb
