#include "report/timing.hpp"

#include <algorithm>
#include <cmath>
#include <vector>

namespace xb::report {

double percentile(const std::vector<double>& sorted, double p) {
    const double rank = p * static_cast<double>(sorted.size() - 1);
    const size_t lo = static_cast<size_t>(std::floor(rank));
    const size_t hi = std::min(lo + 1, sorted.size() - 1);
    return sorted[lo] + (sorted[hi] - sorted[lo]) * (rank - static_cast<double>(lo));
}

TimingStats summarize(std::span<const double> samples) {
    TimingStats s;
    if (samples.empty()) return s;
    std::vector<double> v(samples.begin(), samples.end());
    std::sort(v.begin(), v.end());
    s.count = static_cast<int>(v.size());
    s.min = v.front();
    s.max = v.back();
    double sum = 0;
    for (double x : v) sum += x;
    s.mean = sum / static_cast<double>(v.size());
    double var = 0;
    for (double x : v) var += (x - s.mean) * (x - s.mean);
    s.stddev = v.size() > 1 ? std::sqrt(var / static_cast<double>(v.size() - 1)) : 0.0;
    s.median = percentile(v, 0.5);
    s.p90 = percentile(v, 0.9);
    s.p95 = percentile(v, 0.95);
    s.p99 = percentile(v, 0.99);
    return s;
}

}  // namespace xb::report
