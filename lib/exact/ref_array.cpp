#include "exact/ref_array.hpp"

#include <algorithm>
#include <utility>

#include "core/status.hpp"

namespace xb::exact {

int64_t element_count(const Shape& ne) { return ne[0] * ne[1] * ne[2] * ne[3]; }

RefArray::RefArray(Shape ne, double value) : ne_(ne), v_(static_cast<size_t>(element_count(ne)), value) {}

RefArray::RefArray(Shape ne, std::vector<double> values) : ne_(ne), v_(std::move(values)) {
    XB_CHECK_MSG(static_cast<int64_t>(v_.size()) == element_count(ne), "RefArray: value count differs from the shape");
}

const RefArray& as_dense(const RowSource& source, RefArray& storage) {
    if (const auto* dense = dynamic_cast<const RefArray*>(&source)) return *dense;
    const Shape& ne = source.ne();
    storage = RefArray(ne);
    for (int64_t i3 = 0; i3 < ne[3]; ++i3)
        for (int64_t i2 = 0; i2 < ne[2]; ++i2)
            for (int64_t i1 = 0; i1 < ne[1]; ++i1) source.read_row(i1, i2, i3, &storage.at(0, i1, i2, i3));
    return storage;
}

void RefArray::read_row(int64_t i1, int64_t i2, int64_t i3, double* out) const {
    const double* r = row(i1, i2, i3);
    std::copy(r, r + ne_[0], out);
}

}  // namespace xb::exact
