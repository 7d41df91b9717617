#include "report/metrics.hpp"

#include <algorithm>
#include <cmath>

namespace xb::report {

ErrorMetrics compare(std::span<const float> a, std::span<const float> b) {
    ErrorMetrics m;
    m.count = static_cast<int64_t>(std::min(a.size(), b.size()));
    double err2 = 0, ref2 = 0, val2 = 0, dot = 0;
    bool worst_is_mismatch = false;
    auto mark_worst = [&](size_t i, bool mismatch) {
        m.worst_index = static_cast<int64_t>(i);
        m.worst_value = a[i];
        m.worst_reference = b[i];
        worst_is_mismatch = mismatch;
    };
    for (size_t i = 0; i < static_cast<size_t>(m.count); ++i) {
        const double x = a[i], y = b[i];
        if (std::isnan(x) || std::isnan(y)) {
            if (std::isnan(x) != std::isnan(y)) {
                if (m.nan_count++ == 0 && m.inf_mismatch == 0) mark_worst(i, true);
            }
            continue;
        }
        if (std::isinf(x) || std::isinf(y)) {
            if (x != y) {
                if (m.inf_mismatch++ == 0 && m.nan_count == 0) mark_worst(i, true);
            }
            continue;
        }
        const double d = x - y;
        err2 += d * d;
        ref2 += y * y;
        val2 += x * x;
        dot += x * y;
        if (std::abs(d) > m.max_abs) {
            m.max_abs = std::abs(d);
            if (!worst_is_mismatch) mark_worst(i, false);
        }
    }
    m.nmse = ref2 > 0 ? err2 / ref2 : (err2 > 0 ? INFINITY : 0.0);
    m.cosine = (val2 > 0 && ref2 > 0) ? dot / std::sqrt(val2 * ref2) : (val2 == ref2 ? 1.0 : 0.0);
    return m;
}

}  // namespace xb::report
