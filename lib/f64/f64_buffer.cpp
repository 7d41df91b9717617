#include "f64/f64_buffer.hpp"

#include <algorithm>
#include <cstring>
#include <string>
#include <vector>

#include "backend/host_memory.hpp"
#include "core/size_math.hpp"
#include "f64/f64_device.hpp"

namespace xb::f64 {

namespace {

Status out_of_memory(size_t size, const std::string& why) {
    return Status(StatusCode::OutOfMemory, "F64: cannot allocate a buffer of " + bytes_text(static_cast<double>(size)) + " (" +
                                               bytes_text(2.0 * static_cast<double>(size)) + " held wide, f32 values as doubles): " + why);
}

Status not_on_elements(const Tensor& t, size_t offset, size_t size, size_t unit) {
    return Status(StatusCode::InvalidArgument, "F64: bytes [" + std::to_string(offset) + ", " +
                                                   std::to_string(offset + size) + ") of '" + t.display_name() +
                                                   "' do not lie on its " + std::to_string(unit) +
                                                   "-byte f32 elements (F64 converts them whole, to doubles)");
}

}  // namespace

Device& F64BufferType::device() const { return *device_; }

Result<std::unique_ptr<Buffer>> F64BufferType::alloc_buffer(size_t size) {
    if (size > SIZE_MAX / 2) return out_of_memory(size, "larger than the address space");
    // The host's overcommit would grant it and fail later, when the pages are first written.
    const size_t available = available_memory_bytes();
    if (2 * size > available) return out_of_memory(size, bytes_text(static_cast<double>(available)) + " of host memory are available");
    AddressRange addresses(size);
    if (addresses.base() == nullptr) return out_of_memory(size, "no address range of that size is free");
    AlignedBytes storage(2 * size, 2 * kAlignment);
    if (size > 0 && storage.data() == nullptr) return out_of_memory(size, "the host cannot back it");
    return std::unique_ptr<Buffer>(std::make_unique<F64Buffer>(*this, size, std::move(addresses), std::move(storage)));
}

F64Buffer::F64Buffer(F64BufferType& type, size_t size, AddressRange addresses, AlignedBytes storage)
    : Buffer(type, size), addresses_(std::move(addresses)), storage_(std::move(storage)) {}

bool F64Buffer::contains(const void* addr) const {
    const auto* p = static_cast<const std::byte*>(addr);
    return p >= addresses_.base() && static_cast<size_t>(p - addresses_.base()) <= size();
}

std::byte* F64Buffer::wide(const void* addr) const {
    XB_CHECK_MSG(contains(addr), "F64: address outside its buffer");
    return storage_.data() + 2 * static_cast<size_t>(static_cast<const std::byte*>(addr) - addresses_.base());
}

// Calls copy(wide place, byte offset in the caller's data, bytes) for each piece of the declared
// range [offset, offset + size) of t, a piece per element (or block) it touches: byte k of the
// element starting at declared offset e lives at wide offset 2e + k. Raw types take any range (a
// loader writes a weight in 16 MiB pieces that cut blocks); f32 elements, converted, only whole.
template <typename Copy>
Status for_each_piece(const F64Buffer& buffer, const Tensor& t, size_t offset, size_t size, Copy copy) {
    const size_t unit = type_size(t.type);
    if (t.type == DType::F32 && (offset % unit != 0 || size % unit != 0)) return not_on_elements(t, offset, size, unit);
    const auto* data = static_cast<const std::byte*>(t.data);
    for (size_t pos = offset; pos < offset + size;) {
        const size_t within = pos % unit;
        const size_t n = std::min(unit - within, offset + size - pos);
        copy(buffer.wide(data + (pos - within)) + within, pos - offset, n);
        pos += n;
    }
    return Status::ok();
}

Status F64Buffer::set_tensor_impl(Tensor& t, const void* data, size_t offset, size_t size) {
    const auto* from = static_cast<const std::byte*>(data);
    return for_each_piece(*this, t, offset, size, [&](std::byte* wide_place, size_t at, size_t n) {
        if (t.type != DType::F32) {
            std::memcpy(wide_place, from + at, n);
            return;
        }
        float v;
        std::memcpy(&v, from + at, sizeof v);
        const double wide_value = v;
        std::memcpy(wide_place, &wide_value, sizeof wide_value);
    });
}

Status F64Buffer::get_tensor_impl(const Tensor& t, void* data, size_t offset, size_t size) {
    auto* to = static_cast<std::byte*>(data);
    return for_each_piece(*this, t, offset, size, [&](const std::byte* wide_place, size_t at, size_t n) {
        if (t.type != DType::F32) {
            std::memcpy(to + at, wide_place, n);
            return;
        }
        double wide_value;
        std::memcpy(&wide_value, wide_place, sizeof wide_value);
        const auto v = static_cast<float>(wide_value);
        std::memcpy(to + at, &v, sizeof v);
    });
}

Status F64Buffer::memset_tensor_impl(Tensor& t, uint8_t value, size_t offset, size_t size) {
    // The elements those bytes make, converted as a write of them would be.
    const std::vector<std::byte> bytes(size, static_cast<std::byte>(value));
    return set_tensor_impl(t, bytes.data(), offset, size);
}

Result<bool> F64Buffer::copy_tensor_impl(const Tensor& src, Tensor& dst) {
    const F64Buffer* from = f64_storage(src);
    if (from == nullptr) return false;
    std::memmove(wide(dst.data), from->wide(src.data), 2 * src.nbytes());
    return true;
}

void F64Buffer::clear_impl(uint8_t value) {
    // Every byte: 0 is 0.0 in every type, and 0xff is NaN (or -1) in every type, as on other devices.
    if (storage_.data() != nullptr) std::memset(storage_.data(), value, 2 * size());
}

F64Buffer* f64_storage(const Tensor& t) { return dynamic_cast<F64Buffer*>(storage_buffer(t)); }

}  // namespace xb::f64
