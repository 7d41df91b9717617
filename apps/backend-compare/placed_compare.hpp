// backend-compare --placed: the config as it is placed (its backends, split and weights, through
// the scheduler) against a reference device computing it alone, node by node
// (compare_graph_scheduled): every node is read on whatever device the placement put it, so a
// layer or row split over several devices is checked as it runs.
#pragma once

#include <string>
#include <vector>

#include "cli.hpp"
#include "compare_report.hpp"
#include "config/model.hpp"
#include "node_checks.hpp"

namespace xb::tools {

struct PlacedRun {
    std::string backends;                // the placed backends ("SIM0,SIM1,CPU")
    std::vector<ResolvedFault> faults;   // -P faults, resolved against the placed graph
    bool stopped = false;                // at an introduced node (--stop-at-first)
};

// Runs `options`' config as placed and adds each computed node, against the same node of
// `reference` (built from the same config and named the same, allocated on `ref` with every node
// kept and its inputs set; computed here as the placed run goes), with the device that computed
// it, to `out`.
Result<PlacedRun> compare_placed(const CommonOptions& options, Backend& ref, const config::Model& reference,
                                 const Tolerances& tol, bool stop_at_first, CompareReport& out);

}  // namespace xb::tools
