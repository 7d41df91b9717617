#include "report/metrics.hpp"

#include <algorithm>
#include <cmath>

namespace xb::report {

ErrorMetrics compare(std::span<const float> a, std::span<const float> b) {
    ErrorMetrics m;
    m.count = static_cast<int64_t>(std::min(a.size(), b.size()));
    double err2 = 0, ref2 = 0, val2 = 0, dot = 0;
    for (size_t i = 0; i < static_cast<size_t>(m.count); ++i) {
        const double x = a[i], y = b[i];
        if (std::isnan(x) || std::isnan(y)) {
            if (std::isnan(x) != std::isnan(y)) ++m.nan_count;
            continue;
        }
        if (std::isinf(x) || std::isinf(y)) {
            if (x != y) ++m.inf_mismatch;
            continue;
        }
        const double d = x - y;
        err2 += d * d;
        ref2 += y * y;
        val2 += x * x;
        dot += x * y;
        m.max_abs = std::max(m.max_abs, std::abs(d));
    }
    m.nmse = ref2 > 0 ? err2 / ref2 : (err2 > 0 ? INFINITY : 0.0);
    m.cosine = (val2 > 0 && ref2 > 0) ? dot / std::sqrt(val2 * ref2) : (val2 == ref2 ? 1.0 : 0.0);
    return m;
}

}  // namespace xb::report
