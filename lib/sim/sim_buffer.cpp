#include "sim/sim_buffer.hpp"

#include <cstring>
#include <string>

#include "backend/tensor_io.hpp"
#include "sim/sim_device.hpp"

namespace xb::sim {

namespace {

std::string sized(size_t bytes) { return std::to_string(bytes) + " bytes (" + format_size(bytes) + ")"; }

Status out_of_memory(const SimDevice& device, size_t size, const std::string& why) {
    return Status(StatusCode::OutOfMemory,
                  std::string(device.name()) + ": cannot allocate a buffer of " + sized(size) + ": " + why);
}

}  // namespace

const char* SimBufferType::name() const { return device_->name(); }

Device& SimBufferType::device() const { return *device_; }

Result<std::unique_ptr<Buffer>> SimBufferType::alloc_buffer(size_t size) {
    if (device_->allocation_fails()) return out_of_memory(*device_, size, "the failure fail_alloc injected");
    MemoryBudget& budget = device_->budget();
    if (!budget.take(size)) {
        const MemoryInfo mem = device_->memory();
        return out_of_memory(*device_, size, sized(mem.free) + " of the device's " + sized(mem.total) + " are free");
    }
    Reservation reservation(budget, size);
    AddressRange addresses(size);
    if (addresses.base() == nullptr) return out_of_memory(*device_, size, "no address range of that size is free");
    AlignedBytes storage(size, kAlignment);
    if (size > 0 && storage.data() == nullptr) return out_of_memory(*device_, size, "the host cannot back it");
    return std::unique_ptr<Buffer>(std::make_unique<SimBuffer>(*this, size, std::move(addresses), std::move(storage),
                                                               std::move(reservation)));
}

SimBuffer::SimBuffer(SimBufferType& type, size_t size, AddressRange addresses, AlignedBytes storage,
                     Reservation reservation)
    : Buffer(type, size),
      addresses_(std::move(addresses)),
      storage_(std::move(storage)),
      reservation_(std::move(reservation)) {}

SimDevice& SimBuffer::sim_device() const { return static_cast<SimBufferType&>(type()).sim_device(); }

bool SimBuffer::contains(const void* addr, size_t bytes) const {
    const auto* p = static_cast<const std::byte*>(addr);
    const std::byte* base = addresses_.base();
    return p >= base && static_cast<size_t>(p - base) <= size() && bytes <= size() - static_cast<size_t>(p - base);
}

std::byte* SimBuffer::host_address(const void* addr) const {
    XB_CHECK_MSG(contains(addr, 0), "device address outside its sim buffer");
    return storage_.data() + (static_cast<const std::byte*>(addr) - addresses_.base());
}

Status SimBuffer::set_tensor_impl(Tensor& t, const void* data, size_t offset, size_t size) {
    XB_RETURN_IF_ERROR(sim_device().copy_fails(size));
    std::memcpy(host_address(t.data) + offset, data, size);
    sim_device().record_copy(CopyKind::HostToDevice, size, sim_device().is_pinned(data, size));
    return Status::ok();
}

Status SimBuffer::get_tensor_impl(const Tensor& t, void* data, size_t offset, size_t size) {
    XB_RETURN_IF_ERROR(sim_device().copy_fails(size));
    std::memcpy(data, host_address(t.data) + offset, size);
    sim_device().record_copy(CopyKind::DeviceToHost, size, sim_device().is_pinned(data, size));
    return Status::ok();
}

Status SimBuffer::memset_tensor_impl(Tensor& t, uint8_t value, size_t offset, size_t size) {
    std::memset(host_address(t.data) + offset, value, size);
    return Status::ok();
}

Result<bool> SimBuffer::copy_tensor_impl(const Tensor& src, Tensor& dst) {
    const SimBuffer* from = sim_storage(src);
    if (from == nullptr) return false;
    const size_t bytes = src.nbytes();
    XB_RETURN_IF_ERROR(sim_device().copy_fails(bytes));
    std::memmove(host_address(dst.data), from->host_address(src.data), bytes);
    sim_device().record_copy(&from->sim_device() == &sim_device() ? CopyKind::DeviceToDevice : CopyKind::Peer, bytes, false);
    return true;
}

void SimBuffer::clear_impl(uint8_t value) {
    if (storage_.data() != nullptr) std::memset(storage_.data(), value, size());
}

SimBuffer* sim_storage(const Tensor& t) { return dynamic_cast<SimBuffer*>(storage_buffer(t)); }

}  // namespace xb::sim
