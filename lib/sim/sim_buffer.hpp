// The simulated device's memory as buffers: tensor->data is a device address (inside a
// PROT_NONE AddressRange) that the host cannot dereference; the bytes live in separate host
// storage that only set/get/memset/copy and the device's own streams reach.
#pragma once

#include <cstddef>
#include <memory>

#include "backend/address_range.hpp"
#include "backend/buffer.hpp"
#include "backend/buffer_type.hpp"
#include "core/aligned_bytes.hpp"
#include "sim/device_memory.hpp"

namespace xb::sim {

class SimDevice;

// "SIM0": memory of one sim device (not host memory).
class SimBufferType final : public BufferType {
public:
    explicit SimBufferType(SimDevice& device) : device_(&device) {}

    const char* name() const override;
    // OutOfMemory, naming the sizes, when the device's free memory (or the host) cannot hold it.
    Result<std::unique_ptr<Buffer>> alloc_buffer(size_t size) override;
    size_t alignment() const override { return kAlignment; }
    bool is_host() const override { return false; }
    Device& device() const override;
    SimDevice& sim_device() const { return *device_; }

    static constexpr size_t kAlignment = 256;  // as CUDA allocations: every vector width is aligned

private:
    SimDevice* device_;
};

class SimBuffer final : public Buffer {
public:
    SimBuffer(SimBufferType& type, size_t size, AddressRange addresses, AlignedBytes storage, Reservation reservation);

    SimDevice& sim_device() const;

    // True when [addr, addr + bytes) lies inside this buffer's device addresses.
    bool contains(const void* addr, size_t bytes) const;
    // The host storage behind device address `addr` of this buffer (which must contain it).
    std::byte* host_address(const void* addr) const;

protected:
    void* base_impl() override { return addresses_.base(); }
    Status set_tensor_impl(Tensor& t, const void* data, size_t offset, size_t size) override;
    Status get_tensor_impl(const Tensor& t, void* data, size_t offset, size_t size) override;
    Status memset_tensor_impl(Tensor& t, uint8_t value, size_t offset, size_t size) override;
    // Copies from any sim buffer (this device or a peer); false for other memory.
    Result<bool> copy_tensor_impl(const Tensor& src, Tensor& dst) override;
    void clear_impl(uint8_t value) override;

private:
    AddressRange addresses_;
    AlignedBytes storage_;
    Reservation reservation_;  // last: gives the bytes back once everything else is gone
};

// The sim buffer holding t's bytes (through its view source), or nullptr when t is not in sim memory.
SimBuffer* sim_storage(const Tensor& t);

}  // namespace xb::sim
