#include "cpu/cpu_repack_buffer_type.hpp"

#include <cstdint>
#include <cstring>
#include <string>
#include <vector>

#include "backend/host_buffer.hpp"
#include "core/q4k_x8.hpp"
#include "cpu/cpu_buffer_type.hpp"

namespace xb::cpu {

bool q4_K_repackable(const Tensor& t) {
    return t.type == DType::Q4_K && t.view_src == nullptr && t.is_contiguous() && t.ne[0] % kQKK == 0 &&
           t.ne[1] % kQ4KRowsPerGroup == 0 && t.nelements() > 0;
}

size_t CpuRepackBufferType::alignment() const { return kHostAlignment; }

Result<std::unique_ptr<Buffer>> CpuRepackBufferType::alloc_buffer(size_t size) {
    XB_ASSIGN_OR_RETURN(AlignedBytes memory, allocate_cpu_memory(*device_, name(), size));
    return std::unique_ptr<Buffer>(std::make_unique<CpuRepackBuffer>(*this, std::move(memory)));
}

namespace {

constexpr size_t kInterleaved = SIZE_MAX;

// Each matrix of t (ne[2] * ne[3] of them, t.nb[2] bytes apart in both layouts) converted between
// its rows and its 8-row groups.
void interleave(const Tensor& t, const std::byte* plain, std::byte* out) {
    for (int64_t m = 0; m < t.ne[2] * t.ne[3]; ++m) {
        interleave_q4_K_rows(reinterpret_cast<const BlockQ4_K*>(plain + m * t.nb[2]), t.ne[1], t.ne[0],
                             reinterpret_cast<BlockQ4_Kx8*>(out + m * t.nb[2]));
    }
}
void deinterleave(const Tensor& t, const std::byte* groups, std::byte* out) {
    for (int64_t m = 0; m < t.ne[2] * t.ne[3]; ++m) {
        deinterleave_q4_K_rows(reinterpret_cast<const BlockQ4_Kx8*>(groups + m * t.nb[2]), t.ne[1], t.ne[0],
                               reinterpret_cast<BlockQ4_K*>(out + m * t.nb[2]));
    }
}

}  // namespace

template <class Write>
Status CpuRepackBuffer::write_plain(Tensor& t, size_t offset, size_t size, Write write) {
    auto* bytes = static_cast<std::byte*>(t.data);
    if (!q4_K_repackable(t)) {
        write(bytes + offset);
        return Status::ok();
    }
    std::lock_guard lock(mutex_);
    size_t& state = state_[&t];
    if (state == kInterleaved) {  // a write after loading: through a plain copy of the whole tensor
        std::vector<std::byte> plain(t.nbytes());
        deinterleave(t, bytes, plain.data());
        write(plain.data() + offset);
        interleave(t, plain.data(), bytes);
        return Status::ok();
    }
    write(bytes + offset);
    state += size;
    if (state >= t.nbytes()) {  // every byte there (a loader writes each once): interleave in place
        const std::vector<std::byte> plain(bytes, bytes + t.nbytes());
        interleave(t, plain.data(), bytes);
        state = kInterleaved;
    }
    return Status::ok();
}

Status CpuRepackBuffer::set_tensor_impl(Tensor& t, const void* data, size_t offset, size_t size) {
    return write_plain(t, offset, size, [&](std::byte* at) { std::memcpy(at, data, size); });
}

Status CpuRepackBuffer::memset_tensor_impl(Tensor& t, uint8_t value, size_t offset, size_t size) {
    return write_plain(t, offset, size, [&](std::byte* at) { std::memset(at, value, size); });
}

Status CpuRepackBuffer::get_tensor_impl(const Tensor& t, void* data, size_t offset, size_t size) {
    const auto* bytes = static_cast<const std::byte*>(t.data);
    if (stored_layout_impl(t) == StoredLayout::Plain) {
        std::memcpy(data, bytes + offset, size);
        return Status::ok();
    }
    std::vector<std::byte> plain(t.nbytes());
    deinterleave(t, bytes, plain.data());
    std::memcpy(data, plain.data() + offset, size);
    return Status::ok();
}

void CpuRepackBuffer::clear_impl(uint8_t value) {
    if (memory_.data() != nullptr) std::memset(memory_.data(), value, memory_.size());
    std::lock_guard lock(mutex_);
    state_.clear();  // every tensor's bytes are now the plain value, written by no one
}

void CpuRepackBuffer::reset_impl() {
    std::lock_guard lock(mutex_);
    state_.clear();
}

StoredLayout CpuRepackBuffer::stored_layout_impl(const Tensor& t) const {
    std::lock_guard lock(mutex_);
    const auto it = state_.find(&t);
    return it != state_.end() && it->second == kInterleaved ? StoredLayout::Q4KRows8 : StoredLayout::Plain;
}

}  // namespace xb::cpu
