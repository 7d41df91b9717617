// Every GGUF block format xbackend reads: the structs, the dequantization of a block (and of sixteen
// values, dequantize_part) and, for the newer formats, their integer units (core/quant_unit.hpp).
// The per-family headers hold the definitions; this one adds what is common to them.
#pragma once

#include "core/quant_blocks.hpp"
#include "core/quant_blocks_iq.hpp"
#include "core/quant_blocks_k_low.hpp"
#include "core/quant_blocks_small.hpp"
#include "core/quant_unit.hpp"

namespace xb {

// The formats whose dot products go through decode_unit (see core/quant_unit.hpp).
template <typename Block>
concept UnitBlock = requires(const Block& b, QuantUnit& u) { decode_unit(b, 0, u); };

// A whole block of a newer format: its sixteen-value parts in order.
template <typename Block>
    requires requires { Block::kElems; }
XB_HD void dequantize_block(const Block& b, float* y) {
    for (int part = 0; part < Block::kElems / 16; ++part) dequantize_part(b, part, y + 16 * part);
}

}  // namespace xb
