// --mode perf: every selected case of the perf set timed on every backend: runs, time per run, and
// GB/s for memory-bound ops or GFLOP/s for matrix products and attention (opcheck/case_cost.hpp).
// Cases run one at a time whatever -j says, so that timings do not share the cores. Exit code:
// kExitCheckFailed when a case failed to compute on a backend (the others are still timed).
#pragma once

#include <string>
#include <vector>

#include "options.hpp"
#include "selection.hpp"

namespace xb::tools::opcheck {

int run_perf_mode(const OpCheckOptions& options, const std::vector<SelectedCase>& cases,
                  const std::vector<std::string>& backends);

}  // namespace xb::tools::opcheck
