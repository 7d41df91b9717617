// backend-compare --placed: the config as it is placed (its backends, split and weights, through
// the scheduler) against a reference device computing it alone, node by node. The placed run goes
// through the scheduler's eval callback, which computes up to each node and synchronises, so
// every node is read on whatever device the placement put it; a layer or row split over several
// devices is checked as it runs.
#pragma once

#include <string>

#include "cli.hpp"
#include "compare_report.hpp"
#include "config/model.hpp"
#include "tolerances.hpp"

namespace xb::tools {

// Runs `options`' config as placed and adds each computed node, against the same node of
// `reference` (built from the same config, already computed with every node kept), to `out`.
// Returns the placed backends ("SIM0,SIM1,CPU") for the report.
Result<std::string> compare_placed(const CommonOptions& options, const config::Model& reference, const Tolerances& tol,
                                   bool stop_at_first, CompareReport& out);

}  // namespace xb::tools
