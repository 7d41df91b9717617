#include "sim/sim_link.hpp"

namespace xb::sim {

const char* copy_kind_name(CopyKind kind) {
    switch (kind) {
        case CopyKind::HostToDevice: return "host_to_device";
        case CopyKind::DeviceToHost: return "device_to_host";
        case CopyKind::DeviceToDevice: return "device_to_device";
        case CopyKind::Peer: return "peer";
    }
    return "unknown";
}

namespace {
// The counters of one kind, for const and non-const stats alike.
template <typename Stats>
auto& counters_of(Stats& stats, CopyKind kind) {
    switch (kind) {
        case CopyKind::HostToDevice: return stats.host_to_device;
        case CopyKind::DeviceToHost: return stats.device_to_host;
        case CopyKind::Peer: return stats.peer;
        case CopyKind::DeviceToDevice: break;
    }
    return stats.device_to_device;
}
}  // namespace

CopyStats& SimStats::of(CopyKind kind) { return counters_of(*this, kind); }
const CopyStats& SimStats::of(CopyKind kind) const { return counters_of(*this, kind); }

void CopyCounter::record(CopyKind kind, size_t bytes, const LinkModel& link, bool pinned) {
    std::lock_guard<std::mutex> lock(mutex_);
    CopyStats& s = stats_.of(kind);
    s.count += 1;
    s.pinned += pinned ? 1 : 0;
    s.bytes += bytes;
    s.seconds += link.seconds(bytes);
}

SimStats CopyCounter::snapshot() const {
    std::lock_guard<std::mutex> lock(mutex_);
    return stats_;
}

void CopyCounter::reset() {
    std::lock_guard<std::mutex> lock(mutex_);
    stats_ = {};
}

}  // namespace xb::sim
