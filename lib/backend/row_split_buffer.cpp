#include "backend/row_split_buffer.hpp"

#include <algorithm>
#include <cstdint>

#include "backend/tensor_split.hpp"
#include "core/size_math.hpp"

namespace xb {

RowSplitBufferType::RowSplitBufferType(std::vector<Device*> devices, std::vector<double> ratios)
    : devices_(std::move(devices)), ends_(tensor_split_ends(ratios)) {
    for (const Device* d : devices_) name_ += (name_.empty() ? "" : "+") + std::string(d->name());
    name_ += " rows";
}

std::vector<int64_t> RowSplitBufferType::row_bounds(int64_t rows) const {
    std::vector<int64_t> bounds = {0};
    for (size_t d = 0; d < devices_.size(); ++d) {
        const bool last = d + 1 == devices_.size();
        const int64_t end = share_of(rows, ends_[d]);  // checked: never past `rows`, whatever the ratios
        const int64_t rounded = last ? rows : std::min(rows, end / kRowGranularity * kRowGranularity);
        bounds.push_back(std::max(bounds.back(), rounded));
    }
    return bounds;
}

Result<std::unique_ptr<Buffer>> RowSplitBufferType::alloc_buffer(size_t size) {
    return std::unique_ptr<Buffer>(std::make_unique<RowSplitBuffer>(*this, size));
}

void* RowSplitBuffer::base_impl() {
    // The buffer holds no bytes: tensors get distinct, aligned addresses that nothing dereferences
    // (as ggml's split buffer), their rows living in the slices.
    return reinterpret_cast<void*>(uintptr_t{0x1000});
}

const std::vector<std::unique_ptr<RowSlice>>* RowSplitBuffer::slices(const Tensor& t) const {
    const auto it = slices_.find(&t);
    return it == slices_.end() ? nullptr : &it->second;
}

Status RowSplitBuffer::init_tensor_impl(Tensor& t) {
    if (t.is_view() || !t.is_contiguous()) {
        return Status(StatusCode::InvalidArgument, std::string(name()) + ": '" + t.display_name() +
                                                       "' must be a contiguous weight to be split by rows");
    }
    const RowSplitBufferType& type = split_type();
    const int64_t rows = t.nrows();
    const std::vector<int64_t> bounds = type.row_bounds(rows);
    std::vector<std::unique_ptr<RowSlice>> slices;
    for (size_t d = 0; d < type.devices().size(); ++d) {
        if (bounds[d + 1] == bounds[d]) continue;
        auto slice = std::make_unique<RowSlice>();
        slice->device = static_cast<int>(d);
        slice->row_begin = bounds[d];
        slice->row_end = bounds[d + 1];
        Tensor& s = slice->tensor;
        s.type = t.type;
        s.ne = {t.ne[0], slice->row_end - slice->row_begin, 1, 1};
        s.nb = {t.nb[0], t.nb[1], t.nb[1] * static_cast<size_t>(s.ne[1]), t.nb[1] * static_cast<size_t>(s.ne[1])};
        s.name = t.name + " rows " + std::to_string(slice->row_begin) + ".." + std::to_string(slice->row_end);
        Device& device = *type.devices()[d];
        Result<std::unique_ptr<Buffer>> buffer = device.buffer_type().alloc_buffer(s.nbytes());
        if (!buffer.is_ok()) {
            return Status(buffer.status().code(), std::string(device.name()) + " rows of '" + t.display_name() + "': " +
                                                      buffer.status().message());
        }
        slice->buffer = std::move(buffer).value();
        s.buffer = slice->buffer.get();
        s.data = slice->buffer->base();
        XB_RETURN_IF_ERROR(slice->buffer->init_tensor(s));
        slices.push_back(std::move(slice));
    }
    slices_[&t] = std::move(slices);
    return Status::ok();
}

template <typename F>
Status RowSplitBuffer::for_each_overlap(const Tensor& t, size_t offset, size_t size, F f) const {
    const auto* parts = slices(t);
    if (parts == nullptr) {
        return Status(StatusCode::InvalidArgument, std::string(name()) + ": '" + t.display_name() + "' was not initialised");
    }
    const size_t row_bytes = t.nb[1];
    for (const auto& slice : *parts) {
        const size_t begin = static_cast<size_t>(slice->row_begin) * row_bytes;
        const size_t end = static_cast<size_t>(slice->row_end) * row_bytes;
        const size_t lo = std::max(begin, offset);
        const size_t hi = std::min(end, offset + size);
        if (lo < hi) XB_RETURN_IF_ERROR(f(*slice, lo - begin, lo - offset, hi - lo));
    }
    return Status::ok();
}

Status RowSplitBuffer::set_tensor_impl(Tensor& t, const void* data, size_t offset, size_t size) {
    return for_each_overlap(t, offset, size, [&](RowSlice& s, size_t at, size_t from, size_t bytes) {
        return s.buffer->set_tensor(s.tensor, static_cast<const std::byte*>(data) + from, at, bytes);
    });
}

Status RowSplitBuffer::get_tensor_impl(const Tensor& t, void* data, size_t offset, size_t size) {
    return for_each_overlap(t, offset, size, [&](RowSlice& s, size_t at, size_t to, size_t bytes) {
        return s.buffer->get_tensor(s.tensor, static_cast<std::byte*>(data) + to, at, bytes);
    });
}

Status RowSplitBuffer::memset_tensor_impl(Tensor& t, uint8_t value, size_t offset, size_t size) {
    return for_each_overlap(t, offset, size, [&](RowSlice& s, size_t at, size_t, size_t bytes) {
        return s.buffer->memset_tensor(s.tensor, value, at, bytes);
    });
}

void RowSplitBuffer::clear_impl(uint8_t value) {
    for (auto& [t, parts] : slices_) {
        for (auto& s : parts) s->buffer->clear(value);
    }
}

void describe_slice_product(const Tensor& node, const RowSlice& slice, Tensor& weight, Tensor& x, Tensor& part) {
    part.op = Op::MulMat;
    part.type = DType::F32;
    part.ne = {slice.row_end - slice.row_begin, node.ne[1], node.ne[2], node.ne[3]};
    part.nb = contiguous_strides(part.type, part.ne);
    part.op_params = node.op_params;
    part.src[0] = &weight;
    part.src[1] = &x;
    part.name = slice.tensor.name + " x " + x.display_name();
}

const RowSplitBuffer* row_split_storage(const Tensor& t) { return dynamic_cast<const RowSplitBuffer*>(storage_buffer(t)); }

SliceTransfer slice_transfer(const Tensor& node, const RowSlice& slice) {
    SliceTransfer t;
    t.to_slice = node.src[1] != nullptr ? node.src[1]->nbytes() : 0;
    t.from_slice = static_cast<size_t>(slice.row_end - slice.row_begin) * static_cast<size_t>(node.ne[1]) *
                   static_cast<size_t>(node.ne[2]) * static_cast<size_t>(node.ne[3]) * sizeof(float);
    return t;
}

std::map<std::pair<std::string, std::string>, RowSplitCopies> row_split_copies(const Graph& graph) {
    std::map<std::pair<std::string, std::string>, RowSplitCopies> copies;
    for (const Tensor* node : graph.nodes()) {
        if (node->op != Op::MulMat || node->src[0] == nullptr) continue;
        const RowSplitBuffer* rows = row_split_storage(*node->src[0]);
        const auto* slices = rows != nullptr ? rows->slices(*node->src[0]) : nullptr;
        if (slices == nullptr) continue;
        const std::string main = rows->split_type().device().name();
        for (const auto& slice : *slices) {
            const std::string other = rows->split_type().devices()[static_cast<size_t>(slice->device)]->name();
            if (other == main) continue;
            const SliceTransfer t = slice_transfer(*node, *slice);
            RowSplitCopies& out = copies[{main, other}];
            out.count += 1;
            out.bytes += t.to_slice;
            RowSplitCopies& back = copies[{other, main}];
            back.count += 1;
            back.bytes += t.from_slice;
        }
    }
    return copies;
}

}  // namespace xb
