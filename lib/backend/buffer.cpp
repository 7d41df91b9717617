#include "backend/buffer.hpp"

namespace xb {

const char* buffer_usage_name(BufferUsage usage) {
    switch (usage) {
        case BufferUsage::Any: return "any";
        case BufferUsage::Weights: return "weights";
        case BufferUsage::Compute: return "compute";
    }
    return "unknown";
}

size_t MultiBuffer::total_size(const std::vector<std::unique_ptr<Buffer>>& parts) {
    size_t total = 0;
    for (const auto& p : parts) total += p->size();
    return total;
}

namespace {
BufferType& first_part_type(const std::vector<std::unique_ptr<Buffer>>& parts) {
    XB_CHECK_MSG(!parts.empty(), "a multi-buffer needs at least one part");
    return parts.front()->type();
}
}  // namespace

MultiBuffer::MultiBuffer(std::vector<std::unique_ptr<Buffer>> parts)
    : Buffer(first_part_type(parts), total_size(parts)), parts_(std::move(parts)) {}

void MultiBuffer::set_usage(BufferUsage usage) {
    Buffer::set_usage(usage);
    for (auto& p : parts_) p->set_usage(usage);
}

// Tensors of a multi-buffer always point at the part that holds them, so per-tensor access
// never reaches the multi-buffer itself.
void MultiBuffer::set_tensor(Tensor&, const void*, size_t, size_t) { XB_CHECK_MSG(false, "tensor access through a multi-buffer"); }
void MultiBuffer::get_tensor(const Tensor&, void*, size_t, size_t) { XB_CHECK_MSG(false, "tensor access through a multi-buffer"); }
void MultiBuffer::memset_tensor(Tensor&, uint8_t, size_t, size_t) { XB_CHECK_MSG(false, "tensor access through a multi-buffer"); }

void MultiBuffer::clear(uint8_t value) {
    for (auto& p : parts_) p->clear(value);
}

void MultiBuffer::reset() {
    for (auto& p : parts_) p->reset();
}

bool is_multi_buffer(const Buffer& buffer) { return dynamic_cast<const MultiBuffer*>(&buffer) != nullptr; }

}  // namespace xb
