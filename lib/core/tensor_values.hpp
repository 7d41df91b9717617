// Rewriting the values of a tensor held in host memory, one element at a time in logical order,
// whatever its type and strides: the simulated device's fault injection and the compare tools'
// estimate of a graph's own rounding error both perturb computed results this way.
#pragma once

#include <cstdint>
#include <functional>

#include "core/tensor.hpp"

namespace xb {

// f(n, v) -> the new value of element n (0, 1, ... in logical order, dim 0 fastest), v its value.
using ValueRewrite = std::function<float(int64_t n, float v)>;

// Calls `f` for every element of `t` (t.data must be host memory) and stores what it returns:
// float types element by element, block-quantized types a row at a time (dequantized, rewritten,
// quantized again; their rows are contiguous as every quantized tensor's are), integers by value
// (the result truncated toward zero). The read-only formats (core/quant.hpp's can_quantize) cannot
// be re-encoded: f is not called, and one bit of every block is flipped instead, so that the values
// still change (fault injection's purpose).
void rewrite_values(Tensor& t, const ValueRewrite& f);

}  // namespace xb
