// The block struct of each quantized type, for code instantiated once per type (dequantization,
// the CPU's and the GPU's quantized products).
#pragma once

#include <type_traits>

#include "core/dtype.hpp"
#include "core/quant_formats.hpp"

namespace xb {

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
        case DType::Q2_K: return f(BlockTag<BlockQ2_K>{});
        case DType::Q3_K: return f(BlockTag<BlockQ3_K>{});
        case DType::IQ2_XXS: return f(BlockTag<BlockIQ2_XXS>{});
        case DType::IQ2_XS: return f(BlockTag<BlockIQ2_XS>{});
        case DType::IQ2_S: return f(BlockTag<BlockIQ2_S>{});
        case DType::IQ3_XXS: return f(BlockTag<BlockIQ3_XXS>{});
        case DType::IQ3_S: return f(BlockTag<BlockIQ3_S>{});
        case DType::IQ1_S: return f(BlockTag<BlockIQ1_S>{});
        case DType::IQ1_M: return f(BlockTag<BlockIQ1_M>{});
        case DType::IQ4_NL: return f(BlockTag<BlockIQ4_NL>{});
        case DType::IQ4_XS: return f(BlockTag<BlockIQ4_XS>{});
        case DType::TQ1_0: return f(BlockTag<BlockTQ1_0>{});
        case DType::TQ2_0: return f(BlockTag<BlockTQ2_0>{});
        case DType::MXFP4: return f(BlockTag<BlockMXFP4>{});
        case DType::NVFP4: return f(BlockTag<BlockNVFP4>{});
        default: return otherwise;
    }
}

}  // namespace xb
