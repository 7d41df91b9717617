// A config made ready to run through the scheduler: model built, backends made, weights placed,
// graph allocated and inputs set. graph-run and sched-profile share it.
#pragma once

#include <functional>
#include <memory>
#include <vector>

#include "cli.hpp"
#include "config/config_spec.hpp"
#include "config/model.hpp"
#include "sched/scheduler.hpp"

namespace xb::tools {

struct Session {
    config::Model model;
    std::vector<std::unique_ptr<Backend>> backends;  // priority order, the CPU last
    std::vector<ResolvedFault> faults;               // -P DEVICE:fault_node=..., resolved against model.graph
    std::unique_ptr<Scheduler> sched;                // declared last: destroyed first

    std::vector<std::string> backend_names() const;
};

// -b, --map, --seed and --host-weights as the config builder's options (InvalidArgument for a malformed --map).
Result<config::BuildOptions> build_options(const CommonOptions& options);

// The scheduler's debug printing level from XB_SCHED_DEBUG (0 when unset): 1 prints the splits
// after each split, 2 also every node.
int scheduler_debug_level();

// Changes a loaded config before it is built (sched-profile's --sweep).
using SpecEdit = std::function<void(config::ConfigSpec&)>;

struct SessionOptions {
    bool profile = false;   // the scheduler times copies and computes per split
    bool allocate = true;   // allocate the graph and set its inputs (false: a dry run)
    SpecEdit edit;          // applied to the loaded config before it is built
};

// Loads -c, applies `edit` and -b/--map/--seed, applies -t, names the graph's nodes (name_nodes)
// and gives the devices their faults (-P DEVICE:fault_node=N is node N of this whole graph), makes
// the backends, places the weights, creates the scheduler with the config's options, pins per-node
// overrides, and allocates the graph and sets its inputs when asked to. The other -P settings were
// applied once, at start-up (run_tool).
Result<std::unique_ptr<Session>> open_session(const CommonOptions& options, const SessionOptions& session = {});

}  // namespace xb::tools
