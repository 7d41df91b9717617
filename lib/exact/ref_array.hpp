// RefArray: a dense 4-D array of doubles, the currency of the exact (float64) ops (ops.hpp); and
// RowSource, what the ops that stream a large operand (a weight matrix) read it through.
// Values are in the logical order of xb tensors (dim 0 fastest), whatever the tensor's strides.
#pragma once

#include <array>
#include <cstddef>
#include <cstdint>
#include <vector>

namespace xb::exact {

using Shape = std::array<int64_t, 4>;

int64_t element_count(const Shape& ne);

// A read-only 4-D operand read a row (dim 0) at a time. The products and get_rows take their
// first operand as one, so that a weight matrix stored quantized is dequantized a row at a time
// where it lives (the F64 device's memory) instead of as a whole array of doubles (8 bytes an
// element: 4.2 GB for an 8B model's output matrix).
//
// Thread safety: read_row is called from several threads at once (OpenMP over rows).
class RowSource {
public:
    virtual ~RowSource() = default;
    virtual const Shape& ne() const = 0;
    // The ne()[0] values of row (i1, i2, i3) into out.
    virtual void read_row(int64_t i1, int64_t i2, int64_t i3, double* out) const = 0;
};

class RefArray final : public RowSource {
public:
    RefArray() = default;
    explicit RefArray(Shape ne, double value = 0.0);
    // `values` must hold element_count(ne) values (a programmer error otherwise: XB_CHECK).
    RefArray(Shape ne, std::vector<double> values);

    const Shape& ne() const override { return ne_; }
    void read_row(int64_t i1, int64_t i2, int64_t i3, double* out) const override;
    int64_t size() const { return static_cast<int64_t>(v_.size()); }
    const std::vector<double>& values() const { return v_; }
    // The values of row (i1, i2, i3), contiguous.
    const double* row(int64_t i1, int64_t i2 = 0, int64_t i3 = 0) const { return &v_[index(0, i1, i2, i3)]; }

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

// `source` as a dense array: itself when it is a RefArray, else its rows read once into `storage`.
const RefArray& as_dense(const RowSource& source, RefArray& storage);

// Calls fn(i0, i1, i2, i3) for every index of a tensor of shape ne, dim 0 fastest.
template <typename Fn>
void for_each_index(const Shape& ne, Fn&& fn) {
    for (int64_t i3 = 0; i3 < ne[3]; ++i3)
        for (int64_t i2 = 0; i2 < ne[2]; ++i2)
            for (int64_t i1 = 0; i1 < ne[1]; ++i1)
                for (int64_t i0 = 0; i0 < ne[0]; ++i0) fn(i0, i1, i2, i3);
}

}  // namespace xb::exact
