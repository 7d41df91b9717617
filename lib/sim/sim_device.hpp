// SimDevice: a simulated discrete GPU ("SIM0", "SIM1"). It is labelled as a simulator in its
// description; its memory is not host-accessible (sim_buffer.hpp), its backends are asynchronous
// streams (sim_backend.hpp), it has real events (sim_event.hpp), and its settings
// (sim_settings.hpp) choose the memory size, the ops it refuses, the link model and a fault.
//
// Device-wide settings are `memory`, `host_buffer`, `offload_min_batch` and `unsupported`: there is
// one memory, one host buffer type and one op set per device, answered by supports_op and
// offload_op for the scheduler, so init_backend applies these keys to the device itself (every
// stream of the device sees them). The other keys are stream settings:
// configure() sets the device's defaults and each backend copies them when it is made, with its own
// init_backend keys on top. Thread-safe: settings, memory and statistics are guarded.
#pragma once

#include <memory>
#include <mutex>
#include <string>

#include "backend/device.hpp"
#include "backend/registry.hpp"
#include "sim/device_memory.hpp"
#include "sim/sim_buffer.hpp"
#include "sim/sim_host_buffer.hpp"
#include "sim/sim_link.hpp"
#include "backend/failure_countdown.hpp"
#include "sim/sim_settings.hpp"

namespace xb::sim {

inline constexpr const char* kSimDescription = "xbackend simulated discrete device (not real hardware)";

class SimDevice final : public Device {
public:
    // `pinned`: the pinned host ranges the devices of the family share (a new set when null).
    SimDevice(BackendReg& reg, std::string name, std::shared_ptr<PinnedRanges> pinned = nullptr);

    const char* name() const override { return name_.c_str(); }
    std::string description() const override { return kSimDescription; }
    MemoryInfo memory() const override;
    DeviceType type() const override { return DeviceType::GPU; }
    DeviceCaps caps() const override;
    bool is_simulated() const override { return true; }

    Status configure(std::string_view params) override;
    std::string settings() const override;

    Result<std::unique_ptr<Backend>> init_backend(std::string_view params) override;
    BufferType& buffer_type() override { return buffer_type_; }
    // "SIM0_Host" with host_buffer=1, else none.
    BufferType* host_buffer_type() override;
    // The device's link setting (bandwidth_gbps); streams made with their own keep theirs.
    std::optional<double> host_link_gbps() override;

    bool supports_op(const Tensor& op) const override;
    // Its own memory (a discrete device cannot read host buffers), and weights split by rows over
    // simulated devices with this one first (it runs their products; sim_mirror.hpp).
    bool supports_buft(const BufferType& buft) const override;
    // offload_min_batch (0: never), as CUDA's.
    bool offload_op(const Tensor& op) const override;
    Result<std::unique_ptr<Event>> event_new() override;

    // --- the simulator's own interface ---
    SimSettings current_settings() const;
    MemoryBudget& budget() { return budget_; }
    // Counts a buffer allocation; true when it is the one fail_alloc asked to fail.
    bool allocation_fails();
    // Counts a copy; the failure to return when it is the one fail_copy asked to fail, else ok.
    Status copy_fails(size_t bytes);
    // [p, p + bytes) is pinned host memory (inside a live SIM<i>_Host buffer of any sim device).
    bool is_pinned(const void* p, size_t bytes) const { return pinned_->contains(p, bytes); }
    // Counts a copy to, from or within this device, modelled with the device's link (`pinned`: the
    // host side of a host copy is pinned memory).
    void record_copy(CopyKind kind, size_t bytes, bool pinned);
    // The same with a stream's own link model.
    void record_copy(CopyKind kind, size_t bytes, const LinkModel& link, bool pinned) {
        copies_.record(kind, bytes, link, pinned);
    }
    // Every copy that touched the device: synchronous ones through its buffers, and those of all its
    // streams.
    SimStats stats() const { return copies_.snapshot(); }
    void reset_stats() { copies_.reset(); }

private:
    // Applies memory and unsupported (the device-wide keys) and the stream defaults of `update`;
    // nothing changes when the new memory size is below what live buffers hold.
    Status apply(const SimSettingsUpdate& update);

    std::string name_;
    mutable std::mutex mutex_;
    SimSettings settings_;
    FailureCountdown alloc_failure_;  // fail_alloc
    FailureCountdown copy_failure_;   // fail_copy
    MemoryBudget budget_;
    CopyCounter copies_;
    std::shared_ptr<PinnedRanges> pinned_;
    SimBufferType buffer_type_;
    SimHostBufferType host_buffer_type_;
};

// Registers the "SIM" family with `n_devices` devices SIM0, SIM1, ... (2 by default).
void register_sim_backend(Registry& registry, int n_devices = 2);

}  // namespace xb::sim
