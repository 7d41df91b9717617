// What the scheduler decided for the last graph, as data: splits, their inputs and copies, and
// why each node went where it went. The tools print it; XB_SCHED_DEBUG prints it too.
#pragma once

#include <cstddef>
#include <cstdio>
#include <map>
#include <string>
#include <utility>
#include <vector>

namespace xb {

// Which rule of which pass assigned a tensor to its backend.
enum class AssignReason {
    None,
    User,           // set_tensor_backend
    PreallocDst,    // 1: its own buffer is on that backend
    PreallocView,   // 1: its view source's buffer is on that backend
    GraphInput,     // 1: a graph input goes to the last backend (the CPU)
    Offload,        // 1: a higher-priority backend asked to take an op whose weights are on the CPU
    Weight,         // 1: it uses a weight on that backend
    ExpandGpuDown,  // 2: follows the previous non-CPU node
    ExpandGpuUp,    // 2: follows the next non-CPU node
    ExpandDown,     // 2: follows the previous node
    ExpandUp,       // 2: follows the next node
    Upgrade,        // 3: moved to a higher-priority backend with the same buffer type
    MostInputs,     // 3: the supporting backend with the most usable inputs
    FromView,       // 4: a view goes with its source
    FromConsumer,   // 4: a source goes with its first consumer
};
const char* assign_reason_code(AssignReason r);   // "1.wgt", "2.gpu-down", ... (ggml's debug codes)
const char* assign_reason_text(AssignReason r);   // a sentence for people

// Which host memory a copy between the host and a device touched.
enum class HostMemory {
    None,      // no host side: a copy between two devices' memories (or not measured)
    Pinned,    // page-locked (a device's host buffer type): the link's full speed
    Pageable,  // ordinary host memory, which a GPU driver stages through a pinned bounce buffer
};
const char* host_memory_name(HostMemory m);  // "", "pinned", "pageable"

struct SplitInputReport {
    std::string name;
    size_t bytes = 0;
    std::string source_backend;
    bool copied = false;  // false when the split's backend can read the source's buffer directly
    // Profiling mode only (-1 when not measured or not known):
    double copy_seconds = -1;      // the copy, measured alone (queued and waited for)
    double modelled_seconds = -1;  // simulated links: the link model's time for it
    double link_gbps = -1;         // the link's bandwidth at best (copy_link_gbps)
    HostMemory host_memory = HostMemory::None;

    // GB/s (10^9 bytes/s) of bytes over the measured or the modelled time; -1 when not timed.
    double achieved_gbps() const { return rate_gbps(copy_seconds); }
    double modelled_gbps() const { return rate_gbps(modelled_seconds); }

private:
    double rate_gbps(double seconds) const { return seconds > 0 ? static_cast<double>(bytes) / seconds * 1e-9 : -1; }
};

struct SplitReport {
    int index = 0;
    std::string backend;
    int node_begin = 0;  // [node_begin, node_end) in the graph
    int node_end = 0;
    int n_nodes = 0;     // computing nodes (views excluded)
    std::vector<SplitInputReport> inputs;
    // Profiling mode only (seconds; -1 when not measured).
    double copy_seconds = -1;
    double compute_seconds = -1;
    double modelled_copy_seconds = -1;  // the link model's estimate, for simulated devices
};

struct NodeAssignment {
    int index = 0;
    std::string name;
    std::string op;
    std::string backend;
    AssignReason reason = AssignReason::None;
    // Higher-priority backends that do not support the op ("SIM0" or "SIM0, SIM1"), the usual
    // reason a node is not where its neighbours are; empty when none.
    std::string unsupported_by;
};

struct SchedReport {
    std::vector<std::string> backends;
    std::vector<SplitReport> splits;
    std::vector<NodeAssignment> nodes;
    // Bytes copied per (source backend, destination backend) by the last compute.
    std::map<std::pair<std::string, std::string>, size_t> copy_bytes;

    // The debug print, laid out as ggml's GGML_SCHED_DEBUG output: level 1 splits and inputs, level 2
    // also every node.
    void print(std::FILE* out, int level) const;
};

}  // namespace xb
