// The block struct of each quantized type, for kernels instantiated once per type: core's mapping.
#pragma once

#include "core/quant_block_types.hpp"

namespace xb::cuda {

using xb::BlockTag;
using xb::with_block_type;

}  // namespace xb::cuda
