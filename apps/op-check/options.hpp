// op-check's settings: the shared tool flags plus the mode, the case filters and the worker count.
#pragma once

#include <string>
#include <vector>

#include "cli.hpp"

namespace xb::tools::opcheck {

inline constexpr const char* kTool = "op-check";

struct OpCheckOptions {
    CommonOptions common;
    std::string mode = "test";      // test | perf | support
    std::vector<std::string> ops;   // --op: op names (add, mul_mat, unary, silu, ...)
    std::string pattern;            // -p: glob alternatives searched in case names (name_pattern.hpp)
    int jobs = 1;                   // -j: parallel workers (test and support modes)
    double perf_seconds = 0.2;      // --perf-time: timed computes per case and backend
    bool list_cases = false;        // --list-cases: print the selected cases and exit
};

}  // namespace xb::tools::opcheck
