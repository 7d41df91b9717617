// The 2- and 3-bit k-quants (q2_K, q3_K): block layouts byte for byte those of ggml's files, the
// dequantization of sixteen values at a time with ggml's arithmetic (bit-identical to the gguf
// package's), and the integer units the dot products take (see core/quant_units.hpp).
#pragma once

#include <cstdint>

#include "core/dtype.hpp"
#include "core/host_device.hpp"
#include "core/quant_blocks.hpp"
#include "core/quant_unit.hpp"

namespace xb {

// Sixteen sub-blocks of 16: x = d * (scales[k] & 15) * q - dmin * (scales[k] >> 4), q 2 bits.
// Value e: bits 2s..2s+1 of qs[32h + l] with h = e / 128, s = (e % 128) / 32, l = e % 32.
struct BlockQ2_K {
    static constexpr int kElems = kQKK;
    uint8_t scales[kQKK / 16];
    uint8_t qs[kQKK / 4];
    uint16_t d;
    uint16_t dmin;
};
// Sixteen sub-blocks of 16: x = d * (s_k - 32) * (q - 4 * !hbit), q 2 bits as in q2_K, the high bit
// of value e bit e / 32 of hmask[e % 32], s_k six bits (low four in scales[0..7], high two in
// scales[8..11]).
struct BlockQ3_K {
    static constexpr int kElems = kQKK;
    uint8_t hmask[kQKK / 8];
    uint8_t qs[kQKK / 4];
    uint8_t scales[12];
    uint16_t d;
};
static_assert(sizeof(BlockQ2_K) == 84 && sizeof(BlockQ3_K) == 110);

// Value e's 2 bits sit at bits 2s..2s+1 of byte 32h + l (h = e / 128, s = (e % 128) / 32, l = e % 32),
// as q2_K, q3_K and tq2_0 store them.
XB_HD int k_low_2bits(const uint8_t* qs, int e) { return (qs[32 * (e / 128) + e % 32] >> (2 * ((e % 128) / 32))) & 3; }
// Sets them (qs zeroed beforehand), for the quantizers.
XB_HD void set_k_low_2bits(uint8_t* qs, int e, int q) {
    qs[32 * (e / 128) + e % 32] |= static_cast<uint8_t>((q & 3) << (2 * ((e % 128) / 32)));
}

// The signed 6-bit scale of sub-block k (0..15) of a q3_K block.
XB_HD int q3_K_scale(const uint8_t* scales, int k) {
    const int low = k < 8 ? (scales[k] & 0x0F) : (scales[k - 8] >> 4);
    const int high = (scales[8 + k % 4] >> (2 * (k / 4))) & 3;
    return (low | (high << 4)) - 32;
}

XB_HD int q3_K_value(const BlockQ3_K& b, int e) {
    return k_low_2bits(b.qs, e) - (((b.hmask[e % 32] >> (e / 32)) & 1) ? 0 : 4);
}

XB_HD void dequantize_part(const BlockQ2_K& b, int part, float* y) {
    const float dl = f16_to_f32(b.d) * static_cast<float>(b.scales[part] & 0x0F);
    const float ml = f16_to_f32(b.dmin) * static_cast<float>(b.scales[part] >> 4);
    for (int j = 0; j < 16; ++j) y[j] = mul_then_sub(dl, static_cast<float>(k_low_2bits(b.qs, 16 * part + j)), ml);
}

// Part p's sixteen values take sixteen consecutive bytes of hmask and of one 32-byte row of qs, at
// one bit and one shift each: read as eight 16-bit words (load_u16: blocks are 2-aligned), which
// halves the loads and the registers holding them in the GPU's tile decoders.
XB_HD void dequantize_part(const BlockQ3_K& b, int part, float* y) {
    const float dl = f16_to_f32(b.d) * static_cast<float>(q3_K_scale(b.scales, part));
    const int first = 16 * (part % 2);
    const uint8_t* qs = b.qs + 32 * (part / 8) + first;
    const uint8_t* hmask = b.hmask + first;
    const int shift = 2 * ((part % 8) / 2);
    const int hbit = part / 2;
    for (int j = 0; j < 16; j += 2) {
        const unsigned q2 = load_u16(qs + j) >> shift;
        const unsigned h2 = load_u16(hmask + j) >> hbit;
        y[j] = dl * static_cast<float>(static_cast<int>(q2 & 3) - ((h2 & 1) ? 0 : 4));
        y[j + 1] = dl * static_cast<float>(static_cast<int>((q2 >> 8) & 3) - ((h2 & 0x100) ? 0 : 4));
    }
}

// Unit u: values 32u .. 32u + 31, sub-blocks 2u and 2u + 1.
XB_HD void decode_unit(const BlockQ2_K& b, int unit, QuantUnit& out) {
    const float d = f16_to_f32(b.d);
    const float dmin = f16_to_f32(b.dmin);
    for (int h = 0; h < 2; ++h) {
        const int k = 2 * unit + h;
        out.scale[h] = d * static_cast<float>(b.scales[k] & 0x0F);
        out.offset[h] = -(dmin * static_cast<float>(b.scales[k] >> 4));
    }
    for (int l = 0; l < kUnitValues; ++l) out.q[l] = static_cast<int8_t>(k_low_2bits(b.qs, 32 * unit + l));
}

XB_HD void decode_unit(const BlockQ3_K& b, int unit, QuantUnit& out) {
    const float d = f16_to_f32(b.d);
    for (int h = 0; h < 2; ++h) {
        out.scale[h] = d * static_cast<float>(q3_K_scale(b.scales, 2 * unit + h));
        out.offset[h] = 0.0f;
    }
    for (int l = 0; l < kUnitValues; ++l) out.q[l] = static_cast<int8_t>(q3_K_value(b, 32 * unit + l));
}

}  // namespace xb
