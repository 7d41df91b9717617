#include "backend/device.hpp"

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

}  // namespace xb
