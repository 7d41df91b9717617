#include "opcheck/ref_array.hpp"

#include <utility>

#include "core/status.hpp"

namespace xb::opcheck {

int64_t element_count(const Shape& ne) { return ne[0] * ne[1] * ne[2] * ne[3]; }

RefArray::RefArray(Shape ne, double value) : ne_(ne), v_(static_cast<size_t>(element_count(ne)), value) {}

RefArray::RefArray(Shape ne, std::vector<double> values) : ne_(ne), v_(std::move(values)) {
    XB_CHECK_MSG(static_cast<int64_t>(v_.size()) == element_count(ne), "RefArray: value count differs from the shape");
}

}  // namespace xb::opcheck
