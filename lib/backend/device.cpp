#include "backend/device.hpp"

#include "core/size_math.hpp"

namespace xb {

const char* device_type_name(DeviceType type) {
    switch (type) {
        case DeviceType::CPU: return "CPU";
        case DeviceType::GPU: return "GPU";
        case DeviceType::Accel: return "ACCEL";
    }
    return "unknown";
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

}  // namespace xb
