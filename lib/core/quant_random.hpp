// Random valid blocks of a quantized type: random quants, codebook indices and signs under scales
// chosen so that the values stay within about [-1, 1]. For the formats that cannot be quantized
// (core/quant.hpp's can_quantize), this is how configs and op cases get weights of that type; any
// type works.
#pragma once

#include <cstdint>

#include "core/dtype.hpp"

namespace xb {

// nblocks blocks of `type` at dst, the same bytes for the same seed.
void fill_random_blocks(DType type, void* dst, int64_t nblocks, uint64_t seed);

}  // namespace xb
