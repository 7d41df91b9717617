// The simulated link between host and device, and the copy statistics the sim keeps.
//
// Copies are never slowed down: each one is *modelled* as latency + bytes / bandwidth and the
// modelled seconds are added to counters, so "what-if" profiles cost nothing to run. A copy between
// the host and the device crosses the link at its full bandwidth when the host memory is pinned (a
// SIM<i>_Host buffer, sim_host_buffer.hpp), and at a fraction of it when it is pageable, as a GPU's
// driver stages pageable memory through a pinned bounce buffer (sim_settings.hpp: pageable_ratio).
#pragma once

#include <cstddef>
#include <cstdint>
#include <mutex>

namespace xb::sim {

struct LinkModel {
    double bandwidth_gbps = 16.0;  // GB/s: 10^9 bytes per second (about a PCIe 4.0 x16 link)
    double latency_us = 10.0;      // fixed cost of every copy, in microseconds

    // Modelled duration of one copy of `bytes`.
    double seconds(size_t bytes) const { return latency_us * 1e-6 + static_cast<double>(bytes) / (bandwidth_gbps * 1e9); }
};

// Peer: between two simulated devices, over the peer link (sim_settings.hpp: peer_bandwidth_gbps).
enum class CopyKind { HostToDevice, DeviceToHost, DeviceToDevice, Peer };
const char* copy_kind_name(CopyKind kind);  // "host_to_device"

struct CopyStats {
    uint64_t count = 0;    // copies made
    uint64_t bytes = 0;    // bytes moved
    double seconds = 0.0;  // modelled time, summed copy by copy
    uint64_t pinned = 0;   // of the copies, those whose host side was pinned memory (host copies only)
};

struct SimStats {
    CopyStats host_to_device;
    CopyStats device_to_host;
    CopyStats device_to_device;
    CopyStats peer;  // from another simulated device, counted by the receiving side

    CopyStats& of(CopyKind kind);
    const CopyStats& of(CopyKind kind) const;
};

// Copy counters shared by the host thread and stream workers.
class CopyCounter {
public:
    // `pinned`: the host side of a host copy was pinned memory (counted; the link is already the
    // one that memory travels at).
    void record(CopyKind kind, size_t bytes, const LinkModel& link, bool pinned = false);
    SimStats snapshot() const;
    void reset();

private:
    mutable std::mutex mutex_;
    SimStats stats_;
};

}  // namespace xb::sim
