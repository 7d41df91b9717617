// RefArray: a dense 4-D array of doubles, the currency of the float64 reference (reference.hpp).
// Values are in the logical order of xb tensors (dim 0 fastest), whatever the tensor's strides.
#pragma once

#include <array>
#include <cstddef>
#include <cstdint>
#include <vector>

namespace xb::opcheck {

using Shape = std::array<int64_t, 4>;

int64_t element_count(const Shape& ne);

class RefArray {
public:
    RefArray() = default;
    explicit RefArray(Shape ne, double value = 0.0);
    // `values` must hold element_count(ne) values (a programmer error otherwise: XB_CHECK).
    RefArray(Shape ne, std::vector<double> values);

    const Shape& ne() const { return ne_; }
    int64_t size() const { return static_cast<int64_t>(v_.size()); }
    const std::vector<double>& values() const { return v_; }

    double& at(int64_t i0, int64_t i1 = 0, int64_t i2 = 0, int64_t i3 = 0) { return v_[index(i0, i1, i2, i3)]; }
    double at(int64_t i0, int64_t i1 = 0, int64_t i2 = 0, int64_t i3 = 0) const { return v_[index(i0, i1, i2, i3)]; }
    double& operator[](int64_t flat) { return v_[static_cast<size_t>(flat)]; }
    double operator[](int64_t flat) const { return v_[static_cast<size_t>(flat)]; }

private:
    size_t index(int64_t i0, int64_t i1, int64_t i2, int64_t i3) const {
        return static_cast<size_t>(i0 + ne_[0] * (i1 + ne_[1] * (i2 + ne_[2] * i3)));
    }

    Shape ne_{1, 1, 1, 1};
    std::vector<double> v_ = {0.0};
};

// Calls fn(i0, i1, i2, i3) for every index of a tensor of shape ne, dim 0 fastest.
template <typename Fn>
void for_each_index(const Shape& ne, Fn&& fn) {
    for (int64_t i3 = 0; i3 < ne[3]; ++i3)
        for (int64_t i2 = 0; i2 < ne[2]; ++i2)
            for (int64_t i1 = 0; i1 < ne[1]; ++i1)
                for (int64_t i0 = 0; i0 < ne[0]; ++i0) fn(i0, i1, i2, i3);
}

}  // namespace xb::opcheck
