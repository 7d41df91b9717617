// Rows of a 4-D tensor: a row is the ne[0] elements at fixed (i1, i2, i3). Kernels number rows
// with i1 fastest (0 .. nrows()-1), split that range across threads, and map each number back to
// its coordinates here.
#pragma once

#include <cstddef>
#include <cstdint>

#include "core/tensor.hpp"

namespace xb::cpu_kernels {

struct RowIndex {
    int64_t i1;
    int64_t i2;
    int64_t i3;
};

// Coordinates of row `row` of t; t must have at least one row.
inline RowIndex row_index(const Tensor& t, int64_t row) {
    const int64_t i1 = row % t.ne[1];
    row /= t.ne[1];
    const int64_t i2 = row % t.ne[2];
    return {i1, i2, row / t.ne[2]};
}

// Address of element i0 of row r (through t's strides).
inline std::byte* row_ptr(const Tensor& t, RowIndex r, int64_t i0 = 0) {
    return t.element_ptr(i0, r.i1, r.i2, r.i3);
}

// The row of a broadcast source `b` that a row r of a larger tensor reads (b tiled along 1..3).
inline RowIndex broadcast_row(const Tensor& b, RowIndex r) {
    return {r.i1 % b.ne[1], r.i2 % b.ne[2], r.i3 % b.ne[3]};
}

// Rows are packed f32: the fast paths read them as float arrays.
inline bool packed_f32_rows(const Tensor& t) { return t.type == DType::F32 && t.is_contiguous_rows(); }
inline float* f32_row(const Tensor& t, RowIndex r) { return reinterpret_cast<float*>(row_ptr(t, r)); }

// Element i0 of a row as f32, and back, for any float type and element stride.
inline float load_at(const Tensor& t, const std::byte* row, int64_t i0) {
    return load_as_f32(t.type, row + i0 * static_cast<int64_t>(t.nb[0]));
}
inline void store_at(const Tensor& t, std::byte* row, int64_t i0, float v) {
    store_from_f32(t.type, row + i0 * static_cast<int64_t>(t.nb[0]), v);
}

}  // namespace xb::cpu_kernels
