// In exact arithmetic: the matrix products and the mixture-of-experts ops.
#include <vector>

#include "exact/ops.hpp"

namespace xb::exact {

namespace {

// Dot product of n doubles in four interleaved partial sums: independent chains the compiler can
// keep in vector registers (double's 29 bits beyond any f32 input make the order immaterial), in a
// fixed order, so that F64's results are the same bits on every machine.
double dot(const double* x, const double* y, int64_t n) {
    double acc[4] = {0.0, 0.0, 0.0, 0.0};
    int64_t l = 0;
    for (; l + 4 <= n; l += 4) {
        for (int k = 0; k < 4; ++k) acc[k] += x[l + k] * y[l + k];
    }
    for (; l < n; ++l) acc[0] += x[l] * y[l];
    return (acc[0] + acc[1]) + (acc[2] + acc[3]);
}

}  // namespace

// out[i, j, i2, i3] = sum_l a[l, i, i2 / (b2 / a2), i3 / (b3 / a3)] * b[l, j, i2, i3]
RefArray mul_mat(const RowSource& a, const RowSource& b) {
    const Shape na = a.ne();
    RefArray b_storage;
    const RefArray& bd = as_dense(b, b_storage);
    const Shape& nb = bd.ne();
    const int64_t r2 = nb[2] / na[2], r3 = nb[3] / na[3];
    RefArray out({na[1], nb[1], nb[2], nb[3]});
    const int64_t a_rows = na[1] * na[2] * na[3];
#pragma omp parallel
    {
        std::vector<double> row(static_cast<size_t>(na[0]));
#pragma omp for schedule(dynamic, 16)
        for (int64_t r = 0; r < a_rows; ++r) {
            const int64_t i = r % na[1], a2 = (r / na[1]) % na[2], a3 = r / (na[1] * na[2]);
            a.read_row(i, a2, a3, row.data());
            for (int64_t i3 = a3 * r3; i3 < (a3 + 1) * r3; ++i3)
                for (int64_t i2 = a2 * r2; i2 < (a2 + 1) * r2; ++i2)
                    for (int64_t j = 0; j < nb[1]; ++j) out.at(i, j, i2, i3) = dot(row.data(), bd.row(j, i2, i3), na[0]);
        }
    }
    return out;
}

// out[i, j, i2, i3] = sum_l a[i, l, i2 / (b2 / a2), i3 / (b3 / a3)] * b[j, l, i2, i3]
RefArray out_prod(const RefArray& a, const RefArray& b) {
    const Shape& na = a.ne();
    const Shape& nb = b.ne();
    const int64_t r2 = nb[2] / na[2], r3 = nb[3] / na[3];
    RefArray out({na[0], nb[0], nb[2], nb[3]});
    for_each_index(out.ne(), [&](int64_t i, int64_t j, int64_t i2, int64_t i3) {
        double acc = 0.0;
        for (int64_t l = 0; l < na[1]; ++l) acc += a.at(i, l, i2 / r2, i3 / r3) * b.at(j, l, i2, i3);
        out.at(i, j, i2, i3) = acc;
    });
    return out;
}

// Column (e, t) is matrix ids[e, t] of as times column (e % n_b, t) of b. Each expert's rows are
// read once, for all the columns that chose it.
RefArray mul_mat_id(const RowSource& as, const RowSource& b, const RefArray& ids) {
    const Shape na = as.ne();
    RefArray b_storage;
    const RefArray& bd = as_dense(b, b_storage);
    const int64_t n_used = ids.ne()[0], n_tokens = ids.ne()[1], n_b = bd.ne()[1];
    RefArray out({na[1], n_used, n_tokens, 1});
    std::vector<std::vector<std::pair<int64_t, int64_t>>> chosen(static_cast<size_t>(na[2]));  // (e, t) per expert
    for (int64_t t = 0; t < n_tokens; ++t)
        for (int64_t e = 0; e < n_used; ++e) chosen[static_cast<size_t>(ids.at(e, t))].emplace_back(e, t);
    const int64_t a_rows = na[1] * na[2];
#pragma omp parallel
    {
        std::vector<double> row(static_cast<size_t>(na[0]));
#pragma omp for schedule(dynamic, 16)
        for (int64_t r = 0; r < a_rows; ++r) {
            const int64_t i = r % na[1], expert = r / na[1];
            const auto& pairs = chosen[static_cast<size_t>(expert)];
            if (pairs.empty()) continue;
            as.read_row(i, expert, 0, row.data());
            for (const auto& [e, t] : pairs) out.at(i, e, t) = dot(row.data(), bd.row(e % n_b, t), na[0]);
        }
    }
    return out;
}

RefArray add_id(const RefArray& a, const RefArray& b, const RefArray& ids) {
    RefArray out(a.ne());
    for_each_index(a.ne(), [&](int64_t i, int64_t e, int64_t t, int64_t i3) {
        out.at(i, e, t, i3) = a.at(i, e, t, i3) + b.at(i, static_cast<int64_t>(ids.at(e, t)));
    });
    return out;
}

}  // namespace xb::exact
