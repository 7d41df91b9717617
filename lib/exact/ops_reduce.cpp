// In exact arithmetic: the reductions and normalisations.
#include <algorithm>
#include <cmath>
#include <numeric>

#include "exact/ops.hpp"

namespace xb::exact {

namespace {

double row_sum(const std::vector<double>& row) {
    double s = 0.0;
    for (double x : row) s += x;
    return s;
}

}  // namespace

RefArray reduce_rows(const RefArray& a, const std::function<double(const std::vector<double>&)>& fn) {
    const Shape& ne = a.ne();
    RefArray out({1, ne[1], ne[2], ne[3]});
    std::vector<double> row(static_cast<size_t>(ne[0]));
    for_each_index({1, ne[1], ne[2], ne[3]}, [&](int64_t, int64_t i1, int64_t i2, int64_t i3) {
        for (int64_t i0 = 0; i0 < ne[0]; ++i0) row[static_cast<size_t>(i0)] = a.at(i0, i1, i2, i3);
        out.at(0, i1, i2, i3) = fn(row);
    });
    return out;
}

RefArray transform_rows(const RefArray& a,
                        const std::function<void(std::vector<double>&, int64_t i1, int64_t i2, int64_t i3)>& fn) {
    const Shape& ne = a.ne();
    RefArray out(ne);
    std::vector<double> row(static_cast<size_t>(ne[0]));
    for_each_index({1, ne[1], ne[2], ne[3]}, [&](int64_t, int64_t i1, int64_t i2, int64_t i3) {
        for (int64_t i0 = 0; i0 < ne[0]; ++i0) row[static_cast<size_t>(i0)] = a.at(i0, i1, i2, i3);
        fn(row, i1, i2, i3);
        for (int64_t i0 = 0; i0 < ne[0]; ++i0) out.at(i0, i1, i2, i3) = row[static_cast<size_t>(i0)];
    });
    return out;
}

RefArray sum(const RefArray& a) { return RefArray({1, 1, 1, 1}, std::vector<double>{row_sum(a.values())}); }

RefArray sum_rows(const RefArray& a) { return reduce_rows(a, row_sum); }

RefArray mean(const RefArray& a) {
    return reduce_rows(a,
                       [](const std::vector<double>& row) { return row_sum(row) / static_cast<double>(row.size()); });
}

RefArray argmax(const RefArray& a) {
    const RefArray best = reduce_rows(a, [](const std::vector<double>& row) {
        return static_cast<double>(std::max_element(row.begin(), row.end()) - row.begin());
    });
    return reshape(best, {a.ne()[1], 1, 1, 1});
}

RefArray argsort(const RefArray& a, SortOrder order) {
    return transform_rows(a, [order](std::vector<double>& row, int64_t, int64_t, int64_t) {
        std::vector<int64_t> index(row.size());
        std::iota(index.begin(), index.end(), 0);
        std::stable_sort(index.begin(), index.end(), [&](int64_t x, int64_t y) {
            const double vx = row[static_cast<size_t>(x)], vy = row[static_cast<size_t>(y)];
            // NaN after every number in either order (a strict weak order: NaNs are equivalent).
            if (std::isnan(vx) || std::isnan(vy)) return !std::isnan(vx);
            return order == SortOrder::Descending ? vx > vy : vx < vy;
        });
        for (size_t i = 0; i < row.size(); ++i) row[i] = static_cast<double>(index[i]);
    });
}

RefArray norm(const RefArray& a, double eps) {
    return transform_rows(a, [eps](std::vector<double>& row, int64_t, int64_t, int64_t) {
        const double n = static_cast<double>(row.size());
        const double mu = row_sum(row) / n;
        double var = 0.0;
        for (double x : row) var += (x - mu) * (x - mu);
        const double inv = 1.0 / std::sqrt(var / n + eps);
        for (double& x : row) x = (x - mu) * inv;
    });
}

RefArray rms_norm(const RefArray& a, double eps) {
    return transform_rows(a, [eps](std::vector<double>& row, int64_t, int64_t, int64_t) {
        double sq = 0.0;
        for (double x : row) sq += x * x;
        const double inv = 1.0 / std::sqrt(sq / static_cast<double>(row.size()) + eps);
        for (double& x : row) x *= inv;
    });
}

RefArray l2_norm(const RefArray& a, double eps) {
    return transform_rows(a, [eps](std::vector<double>& row, int64_t, int64_t, int64_t) {
        double sq = 0.0;
        for (double x : row) sq += x * x;
        const double inv = 1.0 / std::max(std::sqrt(sq), eps);
        for (double& x : row) x *= inv;
    });
}

}  // namespace xb::exact
