#include "sim/sim_device.hpp"

#include <algorithm>

#include "backend/row_split_buffer.hpp"
#include "cpu_kernels/kernels.hpp"
#include "sim/sim_backend.hpp"
#include "sim/sim_event.hpp"

namespace xb::sim {

SimDevice::SimDevice(BackendReg& reg, std::string name, std::shared_ptr<PinnedRanges> pinned)
    : Device(reg),
      name_(std::move(name)),
      budget_(settings_.memory),
      pinned_(pinned != nullptr ? std::move(pinned) : std::make_shared<PinnedRanges>()),
      buffer_type_(*this),
      host_buffer_type_(*this, pinned_) {}

MemoryInfo SimDevice::memory() const {
    const size_t total = budget_.total();
    const size_t used = budget_.used();
    return {used < total ? total - used : 0, total};
}

DeviceCaps SimDevice::caps() const {
    DeviceCaps c;
    c.async = true;
    c.events = true;
    std::lock_guard<std::mutex> lock(mutex_);
    c.host_buffer = settings_.host_buffer;
    return c;
}

BufferType* SimDevice::host_buffer_type() {
    std::lock_guard<std::mutex> lock(mutex_);
    return settings_.host_buffer ? &host_buffer_type_ : nullptr;
}

std::optional<double> SimDevice::host_link_gbps() {
    std::lock_guard<std::mutex> lock(mutex_);
    return settings_.link.bandwidth_gbps;
}

Status SimDevice::apply(const SimSettingsUpdate& update) {
    std::lock_guard<std::mutex> lock(mutex_);
    if (update.memory && !budget_.set_total(*update.memory)) {
        const size_t used = budget_.used();
        return Status(StatusCode::InvalidArgument, name_ + ": memory=" + format_size(*update.memory) + " is below the " +
                                                       std::to_string(used) + " bytes (" + format_size(used) +
                                                       ") that live buffers hold");
    }
    update.apply_to(settings_);
    if (update.fail_alloc) alloc_failure_.arm(*update.fail_alloc);
    if (update.fail_copy) copy_failure_.arm(*update.fail_copy);
    return Status::ok();
}

bool SimDevice::allocation_fails() { return alloc_failure_.next_fails(); }

Status SimDevice::copy_fails(size_t bytes) {
    if (!copy_failure_.next_fails()) return Status::ok();
    return Status(StatusCode::Internal, name_ + ": a copy of " + std::to_string(bytes) + " bytes failed (injected by fail_copy)");
}

Status SimDevice::configure(std::string_view params) {
    XB_ASSIGN_OR_RETURN(SimSettingsUpdate update, parse_sim_params(params, name_));
    return apply(update);
}

std::string SimDevice::settings() const { return format_sim_settings(current_settings()); }

SimSettings SimDevice::current_settings() const {
    std::lock_guard<std::mutex> lock(mutex_);
    SimSettings s = settings_;
    // The hooks as they stand: events left until the failure, none once it has happened.
    s.fail_alloc = alloc_failure_.remaining();
    s.fail_copy = copy_failure_.remaining();
    return s;
}

Result<std::unique_ptr<Backend>> SimDevice::init_backend(std::string_view params) {
    XB_ASSIGN_OR_RETURN(SimSettingsUpdate update, parse_sim_params(params, name_));
    SimSettingsUpdate device_wide;
    device_wide.memory = update.memory;
    device_wide.host_buffer = update.host_buffer;
    device_wide.offload_min_batch = update.offload_min_batch;
    device_wide.fail_alloc = update.fail_alloc;
    device_wide.fail_copy = update.fail_copy;
    device_wide.unsupported = update.unsupported;
    XB_RETURN_IF_ERROR(apply(device_wide));
    SimSettings stream_settings = current_settings();
    update.apply_to(stream_settings);
    return std::unique_ptr<Backend>(std::make_unique<SimBackend>(*this, stream_settings));
}

bool SimDevice::supports_op(const Tensor& op) const {
    if (!cpu_kernels::supports_node(op)) return false;
    std::lock_guard<std::mutex> lock(mutex_);
    return !settings_.unsupported.blocks(op);
}

bool SimDevice::offload_op(const Tensor& op) const {
    std::lock_guard<std::mutex> lock(mutex_);
    return settings_.offload_min_batch > 0 && op.op != Op::GetRows && offload_batch(op) >= settings_.offload_min_batch;
}

bool SimDevice::supports_buft(const BufferType& buft) const {
    if (&buft == &buffer_type_) return true;
    const auto* rows = dynamic_cast<const RowSplitBufferType*>(&buft);
    if (rows == nullptr || &rows->device() != this) return false;
    return std::all_of(rows->devices().begin(), rows->devices().end(), [](const Device* d) { return d->is_simulated(); });
}

Result<std::unique_ptr<Event>> SimDevice::event_new() { return std::unique_ptr<Event>(std::make_unique<SimEvent>(*this)); }

void SimDevice::record_copy(CopyKind kind, size_t bytes, bool pinned) {
    LinkModel link;
    {
        std::lock_guard<std::mutex> lock(mutex_);
        link = settings_.link_for(kind, pinned);
    }
    copies_.record(kind, bytes, link, pinned);
}

void register_sim_backend(Registry& registry, int n_devices) {
    BackendReg& reg = registry.add(std::make_unique<BackendReg>("SIM"));
    auto pinned = std::make_shared<PinnedRanges>();  // pinned for every device of the family
    for (int i = 0; i < n_devices; ++i) reg.add_device(std::make_unique<SimDevice>(reg, "SIM" + std::to_string(i), pinned));
}

}  // namespace xb::sim
