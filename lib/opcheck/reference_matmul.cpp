// The float64 reference of the matrix products and the mixture-of-experts ops.
#include "opcheck/reference.hpp"

namespace xb::opcheck::ref {

// out[i, j, i2, i3] = sum_l a[l, i, i2 / (b2 / a2), i3 / (b3 / a3)] * b[l, j, i2, i3]
RefArray mul_mat(const RefArray& a, const RefArray& b) {
    const Shape& na = a.ne();
    const Shape& nb = b.ne();
    const int64_t r2 = nb[2] / na[2], r3 = nb[3] / na[3];
    RefArray out({na[1], nb[1], nb[2], nb[3]});
    for_each_index(out.ne(), [&](int64_t i, int64_t j, int64_t i2, int64_t i3) {
        double acc = 0.0;
        for (int64_t l = 0; l < na[0]; ++l) acc += a.at(l, i, i2 / r2, i3 / r3) * b.at(l, j, i2, i3);
        out.at(i, j, i2, i3) = acc;
    });
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

RefArray mul_mat_id(const RefArray& as, const RefArray& b, const RefArray& ids) {
    const Shape& na = as.ne();
    const Shape& nb = b.ne();
    RefArray out({na[1], ids.ne()[0], ids.ne()[1], 1});
    for_each_index(out.ne(), [&](int64_t i, int64_t e, int64_t t, int64_t) {
        const auto expert = static_cast<int64_t>(ids.at(e, t));
        double acc = 0.0;
        for (int64_t l = 0; l < na[0]; ++l) acc += as.at(l, i, expert) * b.at(l, e % nb[1], t);
        out.at(i, e, t) = acc;
    });
    return out;
}

RefArray add_id(const RefArray& a, const RefArray& b, const RefArray& ids) {
    RefArray out(a.ne());
    for_each_index(a.ne(), [&](int64_t i, int64_t e, int64_t t, int64_t i3) {
        out.at(i, e, t, i3) = a.at(i, e, t, i3) + b.at(i, static_cast<int64_t>(ids.at(e, t)));
    });
    return out;
}

}  // namespace xb::opcheck::ref
