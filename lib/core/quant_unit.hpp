// The integer form of 32 consecutive values of a quantized block, for the dot products of the block
// formats that have no hand-written kernels (q2_K, q3_K, the IQ family, TQ, MXFP4, NVFP4):
// value e ~ scale[e / 16] * q[e] + offset[e / 16], with q a signed byte. Each format's decode_unit
// (core/quant_blocks_*.hpp) fills one; the CPU and the GPU dot it with 8-bit activations (x ~ d * a)
// in integer arithmetic, sixteen values per scale:
//     sum_e value_e * x_e ~ d * (scale_h * sum(q * a) + offset_h * sum(a)).
// The q's are exact; the scales are the format's, up to one rounding (iq1's delta folded into q).
#pragma once

#include <cstdint>

#include "core/host_device.hpp"

namespace xb {

inline constexpr int kUnitValues = 32;

struct QuantUnit {
    int8_t q[kUnitValues];
    float scale[2];   // of values 0..15 and 16..31
    float offset[2];  // likewise; 0 for the symmetric formats
};

// One scale for the whole unit, no offset.
XB_HD void set_unit_scale(QuantUnit& u, float scale) {
    u.scale[0] = u.scale[1] = scale;
    u.offset[0] = u.offset[1] = 0.0f;
}

}  // namespace xb
