// Timing statistics over repeated runs.
#pragma once

#include <span>

namespace xb::report {

struct TimingStats {
    int count = 0;
    double min = 0, max = 0, mean = 0, median = 0, p90 = 0, p95 = 0, p99 = 0, stddev = 0;
};

// Statistics of `samples` (any unit); percentiles by linear interpolation between ranks.
TimingStats summarize(std::span<const double> samples);

}  // namespace xb::report
