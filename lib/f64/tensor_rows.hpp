// Tensors as the F64 device holds them (f64_buffer.hpp), read and written in exact values: the
// operands the exact node evaluator reads (exact/node_eval.hpp) and the results it stores.
#pragma once

#include "core/status.hpp"
#include "core/tensor.hpp"
#include "exact/node_eval.hpp"
#include "exact/ref_array.hpp"
#include "f64/f64_buffer.hpp"

namespace xb::f64 {

// A tensor in F64 memory read row by row, with its strides (any view), every value exact.
class TensorRows final : public exact::RowSource {
public:
    // t must be in F64 memory (f64_storage(t) != nullptr).
    explicit TensorRows(const Tensor& t);

    const exact::Shape& ne() const override { return ne_; }
    void read_row(int64_t i1, int64_t i2, int64_t i3, double* out) const override;

private:
    const Tensor& t_;
    const F64Buffer& buffer_;
    exact::Shape ne_;
};

// Stores `values` into `node` (in F64 memory), every row or the rows values.rows names, in the
// node's own type: doubles stay as they are in an f32 node; an f16 or bf16 node rounds them (through
// f32, as a float device rounds its f32 result), an integer node takes them as integers, a quantized
// node quantizes each row with the type's reference quantizer, as the graph asks.
Status write_node(Tensor& node, const exact::NodeValues& values);

}  // namespace xb::f64
