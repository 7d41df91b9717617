#include "backend/device.hpp"

#include "backend/host_memory.hpp"
#include "core/size_math.hpp"

namespace xb {

const char* device_type_name(DeviceType type) {
    switch (type) {
        case DeviceType::CPU: return "CPU";
        case DeviceType::GPU: return "GPU";
        case DeviceType::Accel: return "ACCEL";
        case DeviceType::Reference: return "REFERENCE";
    }
    return "unknown";
}

std::string Device::unsupported_reason(const Tensor& op) const {
    if (supports_op(op)) return {};
    return std::string(name()) + " does not support " + op.op_label();
}

DeviceProps Device::props() const {
    DeviceProps p;
    p.name = name();
    p.description = description();
    const MemoryInfo mem = memory();
    p.memory_free = mem.free;
    p.memory_total = mem.total;
    p.type = type();
    p.caps = caps();
    return p;
}

Status check_device_memory(const Device& device, uint64_t bytes, std::string_view what) {
    const MemoryInfo m = device.memory();
    if (m.total == 0 || bytes <= m.free) return Status::ok();
    return Status(StatusCode::OutOfMemory, std::string(what) + " need " + bytes_text(static_cast<double>(bytes)) + ", " +
                                               device.name() + " has " + bytes_text(static_cast<double>(m.free)) + " free");
}

Status check_buffer_type_memory(const BufferType& buft, uint64_t bytes, std::string_view what) {
    const Device& device = buft.device();
    if (!buft.is_host() || device.type() == DeviceType::CPU) return check_device_memory(device, bytes, what);
    const size_t free = available_memory_bytes();
    if (bytes <= free) return Status::ok();
    return Status(StatusCode::OutOfMemory, std::string(what) + " need " + bytes_text(static_cast<double>(bytes)) + " of " +
                                               buft.name() + " host memory, the host has " +
                                               bytes_text(static_cast<double>(free)) + " free");
}

}  // namespace xb
