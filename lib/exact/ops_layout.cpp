// In exact arithmetic: the copy and layout ops: views, repeat, concat, pad, arange, rows.
#include <cmath>

#include "core/status.hpp"
#include "exact/ops.hpp"

namespace xb::exact {

RefArray reshape(const RefArray& a, Shape ne) {
    XB_CHECK_MSG(element_count(ne) == a.size(), "exact::reshape: element counts differ");
    return RefArray(ne, a.values());
}

RefArray permute(const RefArray& a, std::array<int, 4> axes) {
    Shape ne{};
    for (size_t i = 0; i < 4; ++i) ne[static_cast<size_t>(axes[i])] = a.ne()[i];
    RefArray out(ne);
    for_each_index(a.ne(), [&](int64_t i0, int64_t i1, int64_t i2, int64_t i3) {
        const std::array<int64_t, 4> src{i0, i1, i2, i3};
        std::array<int64_t, 4> dst{};
        for (size_t i = 0; i < 4; ++i) dst[static_cast<size_t>(axes[i])] = src[i];
        out.at(dst[0], dst[1], dst[2], dst[3]) = a.at(i0, i1, i2, i3);
    });
    return out;
}

RefArray transpose(const RefArray& a) { return permute(a, {1, 0, 2, 3}); }

RefArray strided_view(const RefArray& storage, Shape ne, std::array<int64_t, 4> strides, int64_t offset) {
    RefArray out(ne);
    for_each_index(ne, [&](int64_t i0, int64_t i1, int64_t i2, int64_t i3) {
        out.at(i0, i1, i2, i3) =
            storage[offset + i0 * strides[0] + i1 * strides[1] + i2 * strides[2] + i3 * strides[3]];
    });
    return out;
}

RefArray repeat(const RefArray& a, Shape ne) {
    const Shape& na = a.ne();
    RefArray out(ne);
    for_each_index(ne, [&](int64_t i0, int64_t i1, int64_t i2, int64_t i3) {
        out.at(i0, i1, i2, i3) = a.at(i0 % na[0], i1 % na[1], i2 % na[2], i3 % na[3]);
    });
    return out;
}

RefArray concat(const RefArray& a, const RefArray& b, int dim) {
    const auto d = static_cast<size_t>(dim);
    Shape ne = a.ne();
    ne[d] += b.ne()[d];
    RefArray out(ne);
    for_each_index(ne, [&](int64_t i0, int64_t i1, int64_t i2, int64_t i3) {
        std::array<int64_t, 4> i{i0, i1, i2, i3};
        const bool from_a = i[d] < a.ne()[d];
        if (!from_a) i[d] -= a.ne()[d];
        out.at(i0, i1, i2, i3) = from_a ? a.at(i[0], i[1], i[2], i[3]) : b.at(i[0], i[1], i[2], i[3]);
    });
    return out;
}

RefArray pad(const RefArray& a, std::array<int, 4> after) {
    Shape ne = a.ne();
    for (size_t i = 0; i < 4; ++i) ne[i] += after[i];
    RefArray out(ne);
    for_each_index(
        a.ne(), [&](int64_t i0, int64_t i1, int64_t i2, int64_t i3) { out.at(i0, i1, i2, i3) = a.at(i0, i1, i2, i3); });
    return out;
}

RefArray arange(double start, double stop, double step) {
    const auto n = static_cast<int64_t>(std::ceil((stop - start) / step));
    RefArray out({n, 1, 1, 1});
    for (int64_t i = 0; i < n; ++i) out[i] = start + static_cast<double>(i) * step;
    return out;
}

// out[:, j, i2, i3] = a[:, rows[j, i2, i3], i2, i3]
RefArray get_rows(const RowSource& a, const RefArray& rows) {
    const Shape ne{a.ne()[0], rows.ne()[0], rows.ne()[1], rows.ne()[2]};
    RefArray out(ne);
    for_each_index({1, ne[1], ne[2], ne[3]}, [&](int64_t, int64_t j, int64_t i2, int64_t i3) {
        a.read_row(static_cast<int64_t>(rows.at(j, i2, i3)), i2, i3, &out.at(0, j, i2, i3));
    });
    return out;
}

int64_t set_rows_target(const RefArray& rows, int64_t j, int64_t i2, int64_t i3) {
    return static_cast<int64_t>(rows.at(j, i2 % rows.ne()[1], i3 % rows.ne()[2]));
}

// dst[:, rows[j, i2 % r2, i3 % r3], i2, i3] = src[:, j, i2, i3]; other rows of dst are kept.
RefArray set_rows(const RefArray& dst, const RefArray& src, const RefArray& rows) {
    RefArray out = dst;
    for_each_index(src.ne(), [&](int64_t i0, int64_t j, int64_t i2, int64_t i3) {
        out.at(i0, set_rows_target(rows, j, i2, i3), i2, i3) = src.at(i0, j, i2, i3);
    });
    return out;
}

}  // namespace xb::exact
