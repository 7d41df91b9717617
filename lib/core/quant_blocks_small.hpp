// The ternary and 4-bit float block formats (tq1_0, tq2_0, mxfp4, nvfp4): block layouts byte for
// byte those of ggml's files, the dequantization of sixteen values at a time (bit-identical to the
// gguf package's), and the integer units of the dot products (core/quant_unit.hpp).
#pragma once

#include <array>
#include <cstdint>

#include "core/dtype.hpp"
#include "core/host_device.hpp"
#include "core/quant_blocks.hpp"
#include "core/quant_blocks_iq.hpp"
#include "core/quant_blocks_k_low.hpp"
#include "core/quant_unit.hpp"

namespace xb {

// Ternary values (x = d * t, t in {-1, 0, 1}) packed five to a byte in base 3, as a fixed-point
// fraction: byte = ceil(sum(t_i 3^(4-i)) * 256 / 243), so that multiplying by 3^j and keeping the
// top bits of (byte * 3) gives digit j. Values 0..159 come from qs[0..31] (digit j = e / 32),
// 160..239 from qs[32..47] (digit (e - 160) / 16), 240..255 four to a byte from qh.
struct BlockTQ1_0 {
    static constexpr int kElems = kQKK;
    uint8_t qs[(kQKK - 4 * kQKK / 64) / 5];
    uint8_t qh[kQKK / 64];
    uint16_t d;
};
// Ternary values two bits each (t + 1), as q2_K's quants.
struct BlockTQ2_0 {
    static constexpr int kElems = kQKK;
    uint8_t qs[kQKK / 4];
    uint16_t d;
};
// OCP microscaling FP4: 32 e2m1 values (low nibbles 0..15, high 16..31) sharing a power-of-two
// scale e (e8m0). The table holds e2m1 values doubled, so the scale is halved: x = 2^(e-128) * kv.
struct BlockMXFP4 {
    static constexpr int kElems = kQK;
    uint8_t e;
    uint8_t qs[kQK / 2];
};
// NVIDIA FP4: 64 e2m1 values in four groups of 16, each with an unsigned e4m3 scale; group s's
// values 0..7 are the low nibbles of qs[8s..8s+7], 8..15 the high ones.
struct BlockNVFP4 {
    static constexpr int kElems = 64;
    uint8_t d[4];
    uint8_t qs[32];
};
static_assert(sizeof(BlockTQ1_0) == 54 && sizeof(BlockTQ2_0) == 66 && sizeof(BlockMXFP4) == 17 &&
              sizeof(BlockNVFP4) == 36);

XB_HD int ternary_digit(uint8_t byte, int power_of_3) {
    const auto shifted = static_cast<uint8_t>(byte * power_of_3);  // wraps: the digits above j drop out
    return (static_cast<int>(shifted) * 3) >> 8;
}

// 3^j for j = 0..4, one byte each of a constant: a register shift on the GPU, where a table indexed
// by a runtime j would sit in local memory.
XB_HD int pow3_upto_81(int j) { return static_cast<int>((0x511B090301ull >> (8 * j)) & 0xFF); }

XB_HD int tq_value(const BlockTQ1_0& b, int e) {
    if (e < 160) return ternary_digit(b.qs[e % 32], pow3_upto_81(e / 32)) - 1;
    if (e < 240) return ternary_digit(b.qs[32 + (e - 160) % 16], pow3_upto_81((e - 160) / 16)) - 1;
    return ternary_digit(b.qh[(e - 240) % 4], pow3_upto_81((e - 240) / 4)) - 1;
}
XB_HD int tq_value(const BlockTQ2_0& b, int e) {
    return k_low_2bits(b.qs, e) - 1;
}

template <typename Block>
concept TernaryBlock = requires(const Block& b) { tq_value(b, 0); };

// e2m1 values doubled: 0, 1, 2, 3, 4, 6, 8, 12 and their negatives, as signed bytes.
inline constexpr uint64_t kFp4ValuesLo = 0x0c08060403020100ull;
inline constexpr uint64_t kFp4ValuesHi = 0xf4f8fafcfdfeff00ull;
XB_HD int fp4_value(int q) { return grid_i8(q < 8 ? kFp4ValuesLo : kFp4ValuesHi, q & 7); }

// Half of the e8m0 scale 2^(e - 127): the bits of 2^(e - 128), subnormal for e < 2.
XB_HD float e8m0_half(uint8_t e) {
    return bits_float(e < 2 ? (0x00200000u << e) : (static_cast<uint32_t>(e - 1) << 23));
}
// Half of an unsigned e4m3 scale (bias 7; bit 7 ignored, 0x7f read as 0 as the gguf package does).
XB_HD float ue4m3_half(uint8_t x) {
    if (x == 0 || x == 0x7F) return 0.0f;
    const int exp = (x >> 3) & 0x0F;
    const int man = x & 7;
    // Both forms are exact in f32: man * 2^-10, or (8 + man) * 2^(exp - 11).
    if (exp == 0) return static_cast<float>(man) * 0.0009765625f;
    return static_cast<float>(8 + man) * bits_float(static_cast<uint32_t>(exp - 11 + 127) << 23);
}

#if !defined(__CUDACC__)
// ue4m3_half of every byte, for the CPU's vector decoders: two conversions per 32 values, with
// their branches, cost nvfp4's one-token product more than its dots (lib/core/quant.cpp fills it
// from ue4m3_half once, at start-up).
extern const std::array<float, 256> kUe4m3HalfTable;
#endif

XB_HD int fp4_nibble(const BlockMXFP4& b, int e) { return e < 16 ? (b.qs[e] & 0x0F) : (b.qs[e - 16] >> 4); }
XB_HD int fp4_nibble(const BlockNVFP4& b, int e) {
    const int s = e / 16, l = e % 16;
    return l < 8 ? (b.qs[8 * s + l] & 0x0F) : (b.qs[8 * s + l - 8] >> 4);
}
XB_HD float fp4_scale(const BlockMXFP4& b, int /*k*/) { return e8m0_half(b.e); }
XB_HD float fp4_scale(const BlockNVFP4& b, int k) { return ue4m3_half(b.d[k]); }

template <typename Block>
concept Fp4Block = requires(const Block& b) { fp4_nibble(b, 0); };

// --- dequantization and integer units --------------------------------------------------------------

template <TernaryBlock Block>
XB_HD void dequantize_part(const Block& b, int part, float* y) {
    const float d = f16_to_f32(b.d);
    for (int j = 0; j < 16; ++j) y[j] = d * static_cast<float>(tq_value(b, 16 * part + j));
}

template <Fp4Block Block>
XB_HD void dequantize_part(const Block& b, int part, float* y) {
    const float d = fp4_scale(b, part);
    for (int j = 0; j < 16; ++j) y[j] = d * static_cast<float>(fp4_value(fp4_nibble(b, 16 * part + j)));
}

template <TernaryBlock Block>
XB_HD void decode_unit(const Block& b, int unit, QuantUnit& out) {
    set_unit_scale(out, f16_to_f32(b.d));
    for (int l = 0; l < kUnitValues; ++l) out.q[l] = static_cast<int8_t>(tq_value(b, kUnitValues * unit + l));
}

template <Fp4Block Block>
XB_HD void decode_unit(const Block& b, int unit, QuantUnit& out) {
    for (int h = 0; h < 2; ++h) {
        out.scale[h] = fp4_scale(b, 2 * unit + h);
        out.offset[h] = 0.0f;
    }
    for (int l = 0; l < kUnitValues; ++l) out.q[l] = static_cast<int8_t>(fp4_value(fp4_nibble(b, kUnitValues * unit + l)));
}

}  // namespace xb
