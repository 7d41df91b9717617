#include "f64/f64_buffer.hpp"

#include <cstring>
#include <string>
#include <vector>

#include "backend/host_memory.hpp"
#include "core/size_math.hpp"
#include "f64/f64_device.hpp"

namespace xb::f64 {

namespace {

Status out_of_memory(size_t size, const std::string& why) {
    return Status(StatusCode::OutOfMemory, "F64: cannot allocate a buffer of " + bytes_text(static_cast<double>(size)) +
                                               " (up to " + bytes_text(2.0 * static_cast<double>(size)) +
                                               " held, f32 values as doubles): " + why);
}

Status f32_not_whole(const Tensor& t, size_t offset, size_t size) {
    return Status(StatusCode::InvalidArgument, "F64: bytes [" + std::to_string(offset) + ", " +
                                                   std::to_string(offset + size) + ") of '" + t.display_name() +
                                                   "' do not hold whole f32 elements (F64 converts them, to doubles)");
}

}  // namespace

Device& F64BufferType::device() const { return *device_; }

Result<std::unique_ptr<Buffer>> F64BufferType::alloc_buffer(size_t size) {
    if (size > SIZE_MAX / 4) return out_of_memory(size, "larger than the address space");
    // The host's overcommit would grant it and fail later, when the pages are first written.
    const size_t available = available_memory_bytes();
    if (2 * size > available) {
        return out_of_memory(size, bytes_text(static_cast<double>(available)) + " of host memory are available");
    }
    AddressRange addresses(size);
    if (addresses.base() == nullptr) return out_of_memory(size, "no address range of that size is free");
    AlignedBytes wide(2 * size, 2 * kAlignment);
    AlignedBytes narrow(size, kAlignment);
    if (size > 0 && (wide.data() == nullptr || narrow.data() == nullptr)) return out_of_memory(size, "the host cannot back it");
    return std::unique_ptr<Buffer>(
        std::make_unique<F64Buffer>(*this, size, std::move(addresses), std::move(wide), std::move(narrow)));
}

F64Buffer::F64Buffer(F64BufferType& type, size_t size, AddressRange addresses, AlignedBytes wide, AlignedBytes narrow)
    : Buffer(type, size), addresses_(std::move(addresses)), wide_(std::move(wide)), narrow_(std::move(narrow)) {}

bool F64Buffer::contains(const void* addr) const {
    const auto* p = static_cast<const std::byte*>(addr);
    return p >= addresses_.base() && static_cast<size_t>(p - addresses_.base()) <= size();
}

std::byte* F64Buffer::place(const void* addr, DType type) const {
    XB_CHECK_MSG(contains(addr), "F64: address outside its buffer");
    const auto offset = static_cast<size_t>(static_cast<const std::byte*>(addr) - addresses_.base());
    return type == DType::F32 ? wide_.data() + 2 * offset : narrow_.data() + offset;
}

Status F64Buffer::set_tensor_impl(Tensor& t, const void* data, size_t offset, size_t size) {
    std::byte* to = place(static_cast<const std::byte*>(t.data) + offset, t.type);
    if (t.type != DType::F32) {
        std::memcpy(to, data, size);
        return Status::ok();
    }
    if (offset % sizeof(float) != 0 || size % sizeof(float) != 0) return f32_not_whole(t, offset, size);
    const auto* from = static_cast<const std::byte*>(data);
    for (size_t i = 0; i < size / sizeof(float); ++i) {
        float v;
        std::memcpy(&v, from + i * sizeof(float), sizeof v);
        const double wide_value = v;
        std::memcpy(to + i * sizeof(double), &wide_value, sizeof wide_value);
    }
    return Status::ok();
}

Status F64Buffer::get_tensor_impl(const Tensor& t, void* data, size_t offset, size_t size) {
    const std::byte* from = place(static_cast<const std::byte*>(t.data) + offset, t.type);
    if (t.type != DType::F32) {
        std::memcpy(data, from, size);
        return Status::ok();
    }
    if (offset % sizeof(float) != 0 || size % sizeof(float) != 0) return f32_not_whole(t, offset, size);
    auto* to = static_cast<std::byte*>(data);
    for (size_t i = 0; i < size / sizeof(float); ++i) {
        double wide_value;
        std::memcpy(&wide_value, from + i * sizeof(double), sizeof wide_value);
        const auto v = static_cast<float>(wide_value);
        std::memcpy(to + i * sizeof(float), &v, sizeof v);
    }
    return Status::ok();
}

Status F64Buffer::memset_tensor_impl(Tensor& t, uint8_t value, size_t offset, size_t size) {
    // The elements those bytes make, converted as a write of them would be.
    const std::vector<std::byte> bytes(size, static_cast<std::byte>(value));
    return set_tensor_impl(t, bytes.data(), offset, size);
}

Result<bool> F64Buffer::copy_tensor_impl(const Tensor& src, Tensor& dst) {
    const F64Buffer* from = f64_storage(src);
    if (from == nullptr) return false;
    std::memmove(place(dst.data, dst.type), from->place(src.data, src.type), stride(src.nbytes(), src.type));
    return true;
}

void F64Buffer::clear_impl(uint8_t value) {
    // Every byte: 0 is 0.0 in every type, and 0xff is NaN (or -1) in every type, as on other devices.
    if (wide_.data() != nullptr) std::memset(wide_.data(), value, 2 * size());
    if (narrow_.data() != nullptr) std::memset(narrow_.data(), value, size());
}

F64Buffer* f64_storage(const Tensor& t) { return dynamic_cast<F64Buffer*>(storage_buffer(t)); }

}  // namespace xb::f64
