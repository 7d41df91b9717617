// ggml's devices as xbackend devices: every device of ggml's backend registry (its CPU, CUDA0,
// Vulkan0, any backend library loaded with XB_GGML_BACKENDS) becomes the device "ggml:<name>", so
// that the tools judge the backends users build on ggml with the same machinery as xbackend's own.
//
// A graph given to a ggml device is translated node by node into a ggml graph over the same memory
// (ggml_translation.hpp) and computed with ggml_backend_graph_compute: ggml's kernels, ggml's
// semantics. supports_op asks ggml (ggml_backend_dev_supports_op) about the node as translated, so
// the scheduler and backend-compare put what a ggml device does not compute, or what ggml's ops
// cannot state, elsewhere and say so.
//
// They are foreign devices (Device::is_foreign): used where named (-b ggml:CPU, a placement), never
// picked by Registry::init_best or as a tool's default.
//
// Settings: threads=N (init_backend, set_n_threads) for devices whose ggml backend takes a thread
// count (ggml's CPU); default as xbackend's CPU backend's (backend/host_threads.hpp).
#pragma once

#include <memory>
#include <string>
#include <string_view>

#include "backend/backend.hpp"
#include "backend/registry.hpp"
#include "ggml_devices/ggml_buffer.hpp"

struct ggml_backend_device;
struct ggml_backend;
struct ggml_tensor;

namespace xb::ggml_devices {

// ggml's setter of a backend's thread count (ggml_backend_set_n_threads_t).
using ThreadSetter = void (*)(ggml_backend*, int);

class GgmlDevice final : public Device {
public:
    GgmlDevice(BackendReg& reg, ggml_backend_device* device);

    const char* name() const override { return name_.c_str(); }
    std::string description() const override;
    MemoryInfo memory() const override;
    DeviceType type() const override;
    DeviceCaps caps() const override { return {}; }
    bool is_foreign() const override { return true; }

    // threads=N: the thread count of the backends it makes from now on (devices whose ggml backend
    // takes one).
    Status configure(std::string_view params) override;
    std::string settings() const override;
    Result<std::unique_ptr<Backend>> init_backend(std::string_view params) override;
    BufferType& buffer_type() override { return buffer_type_; }

    // The node translates to a ggml op and ggml's device computes it.
    bool supports_op(const Tensor& op) const override;
    bool supports_buft(const BufferType& buft) const override { return &buft == &buffer_type_; }

    // Why the node cannot run here ("" when it can): ggml's op builders refuse it (with their
    // reason) or the ggml device does not compute it.
    std::string unsupported_reason(const Tensor& op) const override;

    // The same for a translated node: "" when ggml's device computes it.
    std::string ggml_refusal(const ggml_tensor* node) const;

    ggml_backend_device* handle() const { return device_; }
    // ggml's setter of its backends' thread count (ggml's CPU has one); nullptr when none.
    ThreadSetter thread_setter() const { return set_threads_; }
    const GgmlBufferType& ggml_buffer_type() const { return buffer_type_; }

private:
    ggml_backend_device* device_;
    std::string name_;  // "ggml:<ggml's device name>"
    GgmlBufferType buffer_type_;
    bool is_ggml_cpu_;  // ggml's own CPU backend (ggml_cpu_limits.hpp applies)
    ThreadSetter set_threads_;
    int threads_ = 0;   // configure's threads=N; 0: xbackend's CPU default
};

class GgmlBackend final : public Backend {
public:
    // Takes ownership of `backend`.
    GgmlBackend(GgmlDevice& device, ggml_backend* backend, int n_threads);
    ~GgmlBackend() override;
    GgmlBackend(const GgmlBackend&) = delete;
    GgmlBackend& operator=(const GgmlBackend&) = delete;

    const char* name() const override { return device().name(); }
    // Translates the graph and computes it with ggml (synchronously); a node ggml cannot take is
    // NotSupported naming it, before anything is computed.
    Status graph_compute_async(const Graph& graph) override;
    bool set_n_threads(int n_threads) override;

private:
    GgmlDevice& ggml_device() const;

    ggml_backend* backend_;
};

// Registers the "ggml" backend family: one device per device of ggml's registry, after loading
// the backend libraries XB_GGML_BACKENDS names (ggml_library.hpp; errors there were reported by
// check_environment, and a library that failed is left out).
void register_ggml_backends(Registry& registry);

}  // namespace xb::ggml_devices
