#include "ggml_devices/ggml_device.hpp"

#include <ggml-backend.h>
#include <ggml.h>

#include "backend/host_threads.hpp"
#include "ggml_devices/ggml_cpu_limits.hpp"
#include "ggml_devices/ggml_index_check.hpp"
#include "ggml_devices/ggml_library.hpp"
#include "ggml_devices/ggml_translation.hpp"

namespace xb::ggml_devices {

namespace {

// ggml's thread-count setter of the device's backend family, when it has one (ggml's CPU).
ThreadSetter thread_setter_of(ggml_backend_dev_t device) {
    ggml_backend_reg_t reg = ggml_backend_dev_backend_reg(device);
    return reg == nullptr ? nullptr
                          : reinterpret_cast<ggml_backend_set_n_threads_t>(
                                ggml_backend_reg_get_proc_address(reg, "ggml_backend_set_n_threads"));
}

}  // namespace

GgmlDevice::GgmlDevice(BackendReg& reg, ggml_backend_device* device)
    : Device(reg),
      device_(device),
      name_(std::string("ggml:") + ggml_backend_dev_name(device)),
      buffer_type_(*this, ggml_backend_dev_buffer_type(device)),
      is_ggml_cpu_(ggml_backend_dev_type(device) == GGML_BACKEND_DEVICE_TYPE_CPU &&
                   std::string(ggml_backend_reg_name(ggml_backend_dev_backend_reg(device))) == "CPU"),
      set_threads_(thread_setter_of(device)) {}

std::string GgmlDevice::description() const {
    return std::string("ggml ") + ggml_backend_reg_name(ggml_backend_dev_backend_reg(device_)) + " backend: " +
           ggml_backend_dev_description(device_);
}

MemoryInfo GgmlDevice::memory() const {
    size_t free = 0;
    size_t total = 0;
    ggml_backend_dev_memory(device_, &free, &total);
    return {free, total};
}

DeviceType GgmlDevice::type() const {
    switch (ggml_backend_dev_type(device_)) {
        case GGML_BACKEND_DEVICE_TYPE_CPU: return DeviceType::CPU;
        case GGML_BACKEND_DEVICE_TYPE_ACCEL: return DeviceType::Accel;
        default: return DeviceType::GPU;
    }
}

Status GgmlDevice::configure(std::string_view params) {
    XB_ASSIGN_OR_RETURN(const int threads, parse_threads_setting(name_, params));
    if (threads > 0) threads_ = threads;
    return Status::ok();
}

std::string GgmlDevice::settings() const {
    if (set_threads_ == nullptr) return {};
    return "threads=" + std::to_string(threads_ > 0 ? threads_ : default_host_threads());
}

Result<std::unique_ptr<Backend>> GgmlDevice::init_backend(std::string_view params) {
    XB_ASSIGN_OR_RETURN(int threads, parse_threads_setting(name_, params));
    if (threads == 0) threads = threads_;
    ggml_backend_t backend = ggml_backend_dev_init(device_, nullptr);
    if (backend == nullptr) return Status(StatusCode::Internal, name_ + ": ggml could not start a backend on the device");
    return std::unique_ptr<Backend>(std::make_unique<GgmlBackend>(*this, backend, threads));
}

std::string GgmlDevice::unsupported_reason(const Tensor& op) const {
    if (computes_nothing(op)) return "";
    GraphTranslation translation;
    const Result<ggml_tensor*> node = translation.translate_node(op);
    if (!node.is_ok()) return node.status().message();
    const std::string why = ggml_refusal(node.value());
    return why.empty() ? "" : "node '" + op.display_name() + "' (" + op.op_label() + "): " + why;
}

std::string GgmlDevice::ggml_refusal(const ggml_tensor* node) const {
    if (!ggml_backend_dev_supports_op(device_, node)) return name_ + " does not compute it";
    // ggml's CPU says yes to some types and layouts its kernels then abort on.
    if (is_ggml_cpu_) return cpu_kernel_gap(node);
    return "";
}

bool GgmlDevice::supports_op(const Tensor& op) const { return unsupported_reason(op).empty(); }

GgmlBackend::GgmlBackend(GgmlDevice& device, ggml_backend* backend, int n_threads) : Backend(device), backend_(backend) {
    set_n_threads(n_threads > 0 ? n_threads : default_host_threads());
}

GgmlBackend::~GgmlBackend() { ggml_backend_free(backend_); }

GgmlDevice& GgmlBackend::ggml_device() const { return static_cast<GgmlDevice&>(device()); }

bool GgmlBackend::set_n_threads(int n_threads) {
    const ThreadSetter setter = ggml_device().thread_setter();
    if (setter == nullptr || n_threads < 1) return false;
    setter(backend_, n_threads);
    return true;
}

Status GgmlBackend::graph_compute_async(const Graph& graph) {
    GgmlDevice& device = ggml_device();
    const GgmlBufferType& type = device.ggml_buffer_type();
    GraphTranslation translation([&type](const Tensor& t) { return ggml_buffer_of(t, type); });
    if (const Status s = translation.translate(graph); !s.is_ok()) {
        return Status(s.code(), std::string(device.name()) + ": " + s.message());
    }
    if (translation.n_nodes() == 0) return Status::ok();
    // Every node is checked first: ggml's backends abort on an op they do not compute.
    for (int i = 0; i < translation.n_nodes(); ++i) {
        const ggml_tensor* node = ggml_graph_node(translation.graph(), i);
        if (const std::string why = device.ggml_refusal(node); !why.empty()) {
            return Status(StatusCode::NotSupported, std::string(device.name()) + ": node '" + ggml_get_name(node) + "' (" +
                                                        ggml_op_desc(node) + "): " + why);
        }
    }
    // In pieces that end before each node reading indices, which are checked once computed (ggml
    // aborts on one out of range); a graph without such nodes is computed whole.
    const auto compute = [&](int i0, int i1) {
        if (i0 == i1) return Status::ok();
        ggml_cgraph* part = i0 == 0 && i1 == translation.n_nodes() ? translation.graph() : translation.segment(i0, i1);
        const ggml_status status = ggml_backend_graph_compute(backend_, part);
        if (status == GGML_STATUS_SUCCESS) return Status::ok();
        return Status(StatusCode::Internal, std::string(device.name()) + ": ggml_backend_graph_compute failed (" +
                                                ggml_status_to_string(status) + ")");
    };
    int start = 0;
    for (int i = 0; i < translation.n_nodes(); ++i) {
        const ggml_tensor* node = ggml_graph_node(translation.graph(), i);
        if (!reads_indices(node)) continue;
        XB_RETURN_IF_ERROR(compute(start, i));
        start = i;
        if (const Status s = check_indices(node); !s.is_ok()) return Status(s.code(), std::string(device.name()) + ": " + s.message());
    }
    return compute(start, translation.n_nodes());
}

void register_ggml_backends(Registry& registry) {
    if (registry.reg_by_name("ggml") != nullptr) return;
    // A library that failed to load is reported by check_environment; the others are registered.
    static_cast<void>(load_backend_libraries());
    BackendReg& reg = registry.add(std::make_unique<BackendReg>("ggml"));
    for (size_t i = 0; i < ggml_backend_dev_count(); ++i) {
        ggml_backend_dev_t device = ggml_backend_dev_get(i);
        if (ggml_backend_dev_type(device) == GGML_BACKEND_DEVICE_TYPE_META) continue;
        reg.add_device(std::make_unique<GgmlDevice>(reg, device));
    }
}

}  // namespace xb::ggml_devices
