// The block struct of each quantized type, for kernels instantiated once per type.
#pragma once

#include <type_traits>

#include "core/dtype.hpp"
#include "core/quant_blocks.hpp"

namespace xb::cuda {

template <typename Block>
struct BlockTag {
    using type = Block;
};

// f(BlockTag<Block>{}) with the block struct of the quantized type t, or `otherwise` when t is not
// a quantized type.
template <typename F, typename R = std::invoke_result_t<F, BlockTag<BlockQ4_0>>>
R with_block_type(DType t, F&& f, R otherwise) {
    switch (t) {
        case DType::Q4_0: return f(BlockTag<BlockQ4_0>{});
        case DType::Q4_1: return f(BlockTag<BlockQ4_1>{});
        case DType::Q5_0: return f(BlockTag<BlockQ5_0>{});
        case DType::Q5_1: return f(BlockTag<BlockQ5_1>{});
        case DType::Q8_0: return f(BlockTag<BlockQ8_0>{});
        case DType::Q4_K: return f(BlockTag<BlockQ4_K>{});
        case DType::Q5_K: return f(BlockTag<BlockQ5_K>{});
        case DType::Q6_K: return f(BlockTag<BlockQ6_K>{});
        case DType::Q8_K: return f(BlockTag<BlockQ8_K>{});
        default: return otherwise;
    }
}

}  // namespace xb::cuda
