// Settings of the simulated device, given as "key=value,..." to SimDevice::configure and
// SimDevice::init_backend (the same keys in both):
//
//   memory=SIZE          device memory in bytes; suffixes K, M, G, T (powers of 1024), e.g. 512M
//   host_buffer=0|1      1: the device has a pinned host buffer type, "SIM0_Host" (caps().host_buffer,
//                        Device::host_buffer_type), as a CUDA device does, so placements put the
//                        weights that stay on the host in it; 0 (default): none
//   offload_min_batch=N  offload_op answers yes for ops whose batch (Device::offload_batch) is at least N, get_rows
//                        excepted, as CUDA's setting of the same name: the scheduler then moves such
//                        ops here from weights on the CPU, copying those weights; 0 (default): never
//   unsupported=OPS      ops the device claims not to support: op names (rope, get_rows, unary, ...)
//                        or unary/glu sub-op names (silu, swiglu, ...), joined by '+' or ','
//                        ("unsupported=rope,get_rows"); "none" clears the list
//   threads=N            CPU threads that compute each graph on the stream's worker
//   bandwidth_gbps=X     link bandwidth in GB/s (10^9 bytes per second) used to model copies
//   latency_us=Y         fixed cost of each copy in microseconds
//   pageable_ratio=R     copies between the device and pageable host memory (anything but a
//                        pinned SIM<i>_Host buffer) run at R times bandwidth_gbps, R in (0, 1];
//                        default 0.5: a GPU driver stages pageable memory through a pinned bounce
//                        buffer, which costs a host-side memcpy per chunk; how much that loses
//                        depends on the host (the H100 run in results/ copied the offload
//                        config's pageable weights at 6.4 GB/s), so set it to what yours does
//   peer_bandwidth_gbps=X, peer_latency_us=Y
//                        the same for copies from another simulated device (a modelled peer link,
//                        as NVLink or PCIe peer-to-peer between GPUs; default 32 GB/s, 5 us)
//   fault_node=N|NAME    perturb the output of the computed node with index N in the graph given to
//                        graph_compute, or of the nodes named NAME; several joined by '+'
//                        ("fault_node=11+ffn_out"); "none" turns it off. (The tools resolve an index
//                        against the whole graph of the config before they set it, so that a graph
//                        the scheduler hands over in pieces is faulted where the user meant.)
//   fault_size=F         how large the fault is, F in (0, 1], default 0.5: the elements are scaled by
//                        1+F and 1-F in turn, and zeros become +F and -F (NMSE about F^2; 0.25 by
//                        default, above every tolerance of the compare tools); a small F (0.001)
//                        makes a fault small enough to pass a loose tolerance, as the rounding
//                        differences of a quantized product do
//   fail_alloc=N         the N-th buffer allocation on the device from now on fails (once), as if
//                        the device were out of memory: a test hook for every allocation point;
//                        "none" (or 0) turns it off
//   fail_copy=N          the N-th copy to, from or within the device from now on fails (once) with
//                        an Internal status, on the stream's worker for asynchronous copies: a test
//                        hook for every copy path; "none" (or 0) turns it off
#pragma once

#include <bitset>
#include <cstddef>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "core/op.hpp"
#include "core/status.hpp"
#include "core/tensor.hpp"
#include "sim/sim_fault.hpp"
#include "sim/sim_link.hpp"

namespace xb::sim {

// A set of ops (and unary/glu sub-ops) that the device refuses.
struct OpFilter {
    std::bitset<kOpCount> ops;
    std::bitset<kUnaryOpCount> unary;
    std::bitset<kGluOpCount> glu;

    bool blocks(const Tensor& node) const;
    bool empty() const { return ops.none() && unary.none() && glu.none(); }
    // "rope+get_rows", or "none".
    std::string to_string() const;
};

// The nodes whose outputs a fault perturbs: indices and names.
struct FaultTarget {
    std::vector<int> indices;
    std::vector<std::string> names;

    bool empty() const { return indices.empty() && names.empty(); }
    bool matches(int node_index, const Tensor& node) const;
    // "3", "ffn_out+12" or "none".
    std::string to_string() const;
};

struct SimSettings {
    size_t memory = size_t{4} << 30;
    bool host_buffer = false;  // see host_buffer above
    int offload_min_batch = 0;  // see offload_min_batch above
    OpFilter unsupported;
    int threads = 1;  // modest: tests create many streams; OpenMP is not TSan-instrumented beyond one
    LinkModel link;
    double pageable_ratio = 0.5;  // see pageable_ratio above
    LinkModel peer_link{32.0, 5.0};
    FaultTarget fault;
    double fault_size = kDefaultFaultSize;  // see fault_size above
    int fail_alloc = 0;  // see fail_alloc above; SimDevice counts down (FailureCountdown)
    int fail_copy = 0;   // likewise

    // The link a copy of `kind` travels: the peer link between devices, the link within the device
    // and for pinned host memory, the link slowed by pageable_ratio for pageable host memory.
    LinkModel link_for(CopyKind kind, bool pinned) const;
};

// The keys one parameter string gave, parsed and checked; the rest stay unset.
struct SimSettingsUpdate {
    std::optional<size_t> memory;
    std::optional<bool> host_buffer;
    std::optional<int> offload_min_batch;
    std::optional<OpFilter> unsupported;
    std::optional<int> threads;
    std::optional<double> bandwidth_gbps;
    std::optional<double> latency_us;
    std::optional<double> pageable_ratio;
    std::optional<double> peer_bandwidth_gbps;
    std::optional<double> peer_latency_us;
    std::optional<FaultTarget> fault;
    std::optional<double> fault_size;
    std::optional<int> fail_alloc;
    std::optional<int> fail_copy;

    void apply_to(SimSettings& settings) const;
};

// Parses "key=value,..." (see the top of this file). Unknown keys and bad values are
// InvalidArgument naming `device`, the key, and the known keys or the expected form.
Result<SimSettingsUpdate> parse_sim_params(std::string_view params, std::string_view device);

// Every setting as "memory=4G,host_buffer=0,unsupported=none,..." (parseable again).
std::string format_sim_settings(const SimSettings& settings);

// "4G", "1536K", "1000" -- the largest exact power-of-1024 unit.
std::string format_size(size_t bytes);

}  // namespace xb::sim
