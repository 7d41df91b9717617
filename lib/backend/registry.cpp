#include "backend/registry.hpp"

#include <algorithm>
#include <cctype>

#include "core/message_text.hpp"

namespace xb {

Device& BackendReg::add_device(std::unique_ptr<Device> device) {
    devices_.push_back(std::move(device));
    return *devices_.back();
}

BackendReg& Registry::add(std::unique_ptr<BackendReg> reg) {
    regs_.push_back(std::move(reg));
    return *regs_.back();
}

namespace {
bool iequals(std::string_view a, std::string_view b) {
    return a.size() == b.size() && std::equal(a.begin(), a.end(), b.begin(), [](char x, char y) {
               return std::tolower(static_cast<unsigned char>(x)) == std::tolower(static_cast<unsigned char>(y));
           });
}
}  // namespace

BackendReg* Registry::reg_by_name(std::string_view name) const {
    for (const auto& r : regs_) {
        if (iequals(r->name(), name)) return r.get();
    }
    return nullptr;
}

size_t Registry::dev_count() const {
    size_t n = 0;
    for (const auto& r : regs_) n += r->dev_count();
    return n;
}

Device& Registry::dev(size_t i) const {
    for (const auto& r : regs_) {
        if (i < r->dev_count()) return r->dev(i);
        i -= r->dev_count();
    }
    XB_CHECK_MSG(false, "device index out of range");
    std::abort();
}

Device* Registry::dev_by_name(std::string_view name) const {
    for (size_t i = 0; i < dev_count(); ++i) {
        if (iequals(dev(i).name(), name)) return &dev(i);
    }
    return nullptr;
}

Device* Registry::dev_by_type(DeviceType type) const {
    for (size_t i = 0; i < dev_count(); ++i) {
        if (dev(i).type() == type && !dev(i).is_foreign()) return &dev(i);
    }
    return nullptr;
}

std::string Registry::device_names() const {
    std::string names;
    for (size_t i = 0; i < dev_count(); ++i) {
        if (i) names += ", ";
        names += dev(i).name();
    }
    return names;
}

Result<std::unique_ptr<Backend>> Registry::init_by_name(std::string_view name, std::string_view params) const {
    Device* d = dev_by_name(name);
    if (d == nullptr) {
        return Status(StatusCode::NotFound,
                      "no device named " + quoted_name(name) + "; available: " + device_names());
    }
    return d->init_backend(params);
}

Result<std::unique_ptr<Backend>> Registry::init_by_type(DeviceType type, std::string_view params) const {
    Device* d = dev_by_type(type);
    if (d == nullptr) {
        return Status(StatusCode::NotFound, std::string("no device of type ") + device_type_name(type) +
                                                "; available: " + device_names());
    }
    return d->init_backend(params);
}

Result<std::unique_ptr<Backend>> Registry::init_best() const {
    // A real GPU first, then the CPU; simulators are for tests and what-if profiles only.
    for (DeviceType type : {DeviceType::GPU, DeviceType::CPU}) {
        for (size_t i = 0; i < dev_count(); ++i) {
            if (dev(i).type() == type && !dev(i).is_simulated() && !dev(i).is_foreign()) return dev(i).init_backend();
        }
    }
    return Status(StatusCode::NotFound, "no GPU or CPU device is registered");
}

Result<std::vector<DeviceParam>> parse_device_params(std::string_view params) {
    std::vector<DeviceParam> out;
    size_t pos = 0;
    while (pos < params.size()) {
        size_t end = params.find(',', pos);
        if (end == std::string_view::npos) end = params.size();
        const std::string_view item = params.substr(pos, end - pos);
        pos = end + 1;
        if (item.empty()) continue;
        const size_t eq = item.find('=');
        if (eq == std::string_view::npos && !out.empty()) {
            // A value may itself be a list: "unsupported=rope,get_rows" continues the last value.
            out.back().value += "," + std::string(item);
            continue;
        }
        if (eq == std::string_view::npos || eq == 0) {
            return Status(StatusCode::InvalidArgument,
                          "device parameter " + quoted_name(item) + " is not of the form key=value");
        }
        out.push_back({std::string(item.substr(0, eq)), std::string(item.substr(eq + 1))});
    }
    return out;
}

}  // namespace xb
