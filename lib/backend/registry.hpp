// Registry: every backend family (BackendReg) and its devices (ggml_backend_reg / registry).
//
// A registry knows only the interfaces: the built-in backends are added to one by
// builtin/builtin_backends.hpp (which also holds the process's global registry); more can be added
// with add(). Registration is not thread-safe with concurrent lookups: register before use.
#pragma once

#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "backend/backend.hpp"
#include "backend/device.hpp"
#include "core/status.hpp"

namespace xb {

// A family of devices (ggml_backend_reg): "CPU", "CUDA", "BLAS", "SIM".
class BackendReg {
public:
    explicit BackendReg(std::string name) : name_(std::move(name)) {}
    virtual ~BackendReg() = default;
    BackendReg(const BackendReg&) = delete;
    BackendReg& operator=(const BackendReg&) = delete;

    const std::string& name() const { return name_; }
    size_t dev_count() const { return devices_.size(); }
    Device& dev(size_t i) const { return *devices_.at(i); }
    Device& add_device(std::unique_ptr<Device> device);

private:
    std::string name_;
    std::vector<std::unique_ptr<Device>> devices_;
};

class Registry {
public:
    Registry() = default;
    Registry(const Registry&) = delete;
    Registry& operator=(const Registry&) = delete;

    BackendReg& add(std::unique_ptr<BackendReg> reg);

    size_t reg_count() const { return regs_.size(); }
    BackendReg& reg(size_t i) const { return *regs_.at(i); }
    BackendReg* reg_by_name(std::string_view name) const;

    size_t dev_count() const;
    Device& dev(size_t i) const;
    // Case-insensitive device name ("cpu" finds "CPU").
    Device* dev_by_name(std::string_view name) const;
    // The first device of this type.
    Device* dev_by_type(DeviceType type) const;
    // "CPU, BLAS, SIM0" -- for messages that list what is available.
    std::string device_names() const;

    Result<std::unique_ptr<Backend>> init_by_name(std::string_view name, std::string_view params = {}) const;
    Result<std::unique_ptr<Backend>> init_by_type(DeviceType type, std::string_view params = {}) const;
    // The first real GPU device, else the CPU (ggml_backend_init_best); never a simulator.
    Result<std::unique_ptr<Backend>> init_best() const;

private:
    std::vector<std::unique_ptr<BackendReg>> regs_;
};

// Parses "key=value,key2=value2" device parameter strings; an item without '=' continues the
// previous value, so values may be lists ("unsupported=rope,get_rows").
struct DeviceParam {
    std::string key;
    std::string value;
};
Result<std::vector<DeviceParam>> parse_device_params(std::string_view params);

}  // namespace xb
