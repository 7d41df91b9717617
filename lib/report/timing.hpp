// Timing statistics over repeated runs.
#pragma once

#include <span>
#include <vector>

namespace xb::report {

struct TimingStats {
    int count = 0;
    double min = 0, max = 0, mean = 0, median = 0, p90 = 0, p95 = 0, p99 = 0, stddev = 0;
};

// Statistics of `samples` (any unit); percentiles by linear interpolation between ranks.
TimingStats summarize(std::span<const double> samples);

// The p-quantile (0 <= p <= 1) of ascending, non-empty `sorted`, by linear interpolation between
// ranks (numpy's default).
double percentile(const std::vector<double>& sorted, double p);

}  // namespace xb::report
