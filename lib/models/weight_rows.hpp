// The row-length rule of the model builders' weights: a quantized weight's rows are whole blocks,
// so every size that becomes a weight's dim 0 must be a multiple of the type's block size.
#pragma once

#include <cstdint>
#include <initializer_list>
#include <utility>

#include "core/dtype.hpp"
#include "core/status.hpp"

namespace xb {

// InvalidArgument naming the builder, the type and every size that does not fit, e.g.
// "llama_decoder: weight_type q4_K stores rows in blocks of 256 values; n_embd (32) and n_ff (64) are
// not multiples of 256".
Status check_weight_rows(const char* builder, DType weight_type,
                         std::initializer_list<std::pair<const char*, int64_t>> row_sizes);

}  // namespace xb
