// The IQ block formats (iq1_s, iq1_m, iq2_xxs, iq2_xs, iq2_s, iq3_xxs, iq3_s, iq4_nl, iq4_xs):
// block layouts byte for byte those of ggml's files, the dequantization of sixteen values at a time
// with ggml's arithmetic (bit-identical to the gguf package's), and the integer units of the dot
// products (core/quant_unit.hpp).
//
// The 1- to 3-bit formats store groups of 8 (or 4) values as an index into a codebook of lattice
// points (core/iq_grids.hpp) plus a sign per value; iq4 stores 4-bit indices into a 16-value
// non-linear table.
#pragma once

#include <cstdint>

#include "core/dtype.hpp"
#include "core/host_device.hpp"
#include "core/iq_grids.hpp"
#include "core/quant_blocks.hpp"
#include "core/quant_unit.hpp"

namespace xb {

// Per 32 values: 4 one-byte codebook indices (8 values each), then a word whose bits 7l..7l+6 pick
// the signs of group l (ksigns) and whose top four bits are the scale s: x = d (0.5 + s) / 4 * grid.
struct BlockIQ2_XXS {
    static constexpr int kElems = kQKK;
    uint16_t d;
    uint8_t qs[kQKK / 4];
};
// Per 16 values: 2 sixteen-bit words, each a 9-bit index and 7 sign bits; a 4-bit scale per 16.
struct BlockIQ2_XS {
    static constexpr int kElems = kQKK;
    uint16_t d;
    uint8_t qs[kQKK / 4];
    uint8_t scales[kQKK / 32];
};
// Per group of 8: a 10-bit index (8 bits in qs, 2 in qh) and 8 explicit sign bits; 4-bit scale per 16.
struct BlockIQ2_S {
    static constexpr int kElems = kQKK;
    uint16_t d;
    uint8_t qs[kQKK / 8];
    uint8_t signs[kQKK / 8];
    uint8_t qh[kQKK / 32];
    uint8_t scales[kQKK / 32];
};
// Per 32 values: 8 one-byte indices into a codebook of 4-value points, then (after all 64 indices)
// one word per 32 values of signs and scale as in iq2_xxs: x = d (0.5 + s) / 2 * grid.
struct BlockIQ3_XXS {
    static constexpr int kElems = kQKK;
    uint16_t d;
    uint8_t qs[3 * kQKK / 8];
};
// Per group of 4: a 9-bit index (8 bits in qs, 1 in qh), explicit signs; x = d (1 + 2 s) * grid, s
// a 4-bit scale per 32.
struct BlockIQ3_S {
    static constexpr int kElems = kQKK;
    uint16_t d;
    uint8_t qs[kQKK / 4];
    uint8_t qh[kQKK / 32];
    uint8_t signs[kQKK / 8];
    uint8_t scales[kQKK / 64];
};
// Per group of 8: an 11-bit index into a codebook of {-1, 0, 1} points (8 bits in qs, 3 in qh);
// per 32 values a word of qh also holds a 3-bit scale s and the sign of delta:
// x = d (2 s + 1) (grid +- 1/8).
struct BlockIQ1_S {
    static constexpr int kElems = kQKK;
    uint16_t d;
    uint8_t qs[kQKK / 8];
    uint16_t qh[kQKK / 32];
};
// As iq1_s with a 4-bit qh nibble per group of 8 (3 index bits, the sign of delta), 3-bit scales per
// 16, and the f16 super-block scale spread over the top nibbles of the four scale words.
struct BlockIQ1_M {
    static constexpr int kElems = kQKK;
    uint8_t qs[kQKK / 8];
    uint8_t qh[kQKK / 16];
    uint8_t scales[kQKK / 32];
};
// 32 values: x = d * kIq4Values[q], q 4 bits (low nibbles values 0..15, high 16..31).
struct BlockIQ4_NL {
    static constexpr int kElems = kQK;
    uint16_t d;
    uint8_t qs[kQK / 2];
};
// Eight groups of 32 as iq4_nl, each with a 6-bit scale s (x = d (s - 32) kIq4Values[q]).
struct BlockIQ4_XS {
    static constexpr int kElems = kQKK;
    uint16_t d;
    uint16_t scales_h;
    uint8_t scales_l[kQKK / 64];
    uint8_t qs[kQKK / 2];
};
static_assert(sizeof(BlockIQ2_XXS) == 66 && sizeof(BlockIQ2_XS) == 74 && sizeof(BlockIQ2_S) == 82 &&
              sizeof(BlockIQ3_XXS) == 98 && sizeof(BlockIQ3_S) == 110 && sizeof(BlockIQ1_S) == 50 &&
              sizeof(BlockIQ1_M) == 56 && sizeof(BlockIQ4_NL) == 18 && sizeof(BlockIQ4_XS) == 136);

// --- shared pieces ----------------------------------------------------------------------------------

// The sign byte of a 7-bit sign index: the eighth sign makes the number of minus signs even.
XB_HD int iq_sign_byte(int index7) {
    int parity = 0;
    for (int i = 0; i < 7; ++i) parity ^= (index7 >> i) & 1;
    return index7 | (parity << 7);
}

// Coordinate j of a codebook entry (one byte each, coordinate 0 lowest).
XB_HD int grid_u8(uint64_t entry, int j) { return static_cast<int>((entry >> (8 * j)) & 0xFF); }
XB_HD int grid_i8(uint64_t entry, int j) { return static_cast<int8_t>((entry >> (8 * j)) & 0xFF); }

// The 16 values of iq4_nl's non-linear table (and iq4_xs's), as two words of signed bytes.
inline constexpr uint64_t kIq4ValuesLo = 0xf6eaddcfbfad9881ull;  // -127 -104 -83 -65 -49 -35 -22 -10
inline constexpr uint64_t kIq4ValuesHi = 0x7159453526190d01ull;  //    1   13  25  38  53  69  89 113
XB_HD int iq4_value(int q) { return grid_i8(q < 8 ? kIq4ValuesLo : kIq4ValuesHi, q & 7); }

// --- the fields of each format ----------------------------------------------------------------------
// Codebook indices per group of 8 values (iq3: of 4), sign words and the raw integer scale fields,
// read once here for the dequantization, the units and the CPU's vector decoders (on their hot
// path: the indices are split with shifts and masks, which signed division would not compile to).

// iq2_xxs / iq3_xxs: the word of signs and scale of 32-value group ib (sign indices at bits 7l,
// the scale in the top four bits).
XB_HD uint32_t iq2xxs_aux(const BlockIQ2_XXS& b, int ib) { return load_u32_le(b.qs + 8 * ib + 4); }
XB_HD uint32_t iq3xxs_aux(const BlockIQ3_XXS& b, int ib) { return load_u32_le(b.qs + kQKK / 4 + 4 * ib); }
// iq2_xs / iq2_s: the 4-bit scale of 16-value group k.
XB_HD int iq2_nibble_scale(const uint8_t* scales, int k) { return (scales[k >> 1] >> (4 * (k & 1))) & 0x0F; }
// iq2_s: the 10-bit codebook index of group 4 ib + i; iq3_s: the 9-bit index of 4-value entry
// 8 ib + j (ib: the 32-value group).
XB_HD int iq2s_index(const BlockIQ2_S& b, int ib, int i) { return b.qs[4 * ib + i] | (((b.qh[ib] >> (2 * i)) & 3) << 8); }
XB_HD int iq3s_index(const BlockIQ3_S& b, int ib, int j) { return b.qs[8 * ib + j] | (((b.qh[ib] >> j) & 1) << 8); }
// iq3_s: the 4-bit scale of 32-value group ib.
XB_HD int iq3s_scale_field(const BlockIQ3_S& b, int ib) { return (b.scales[ib >> 1] >> (4 * (ib & 1))) & 0x0F; }
// iq1_s: the 3-bit scale of 32-value group ib; iq1_m: of 16-value group k.
XB_HD int iq1s_scale_field(const BlockIQ1_S& b, int ib) { return (b.qh[ib] >> 12) & 7; }
XB_HD int iq1_m_nibble(const BlockIQ1_M& b, int g) { return (b.qh[g >> 1] >> (4 * (g & 1))) & 0x0F; }
XB_HD uint16_t iq1_m_scale_word(const BlockIQ1_M& b, int i) { return load_u16_at(b.scales + 2 * i); }
XB_HD int iq1m_scale_field(const BlockIQ1_M& b, int k) { return (iq1_m_scale_word(b, k >> 2) >> (3 * (k & 3))) & 7; }
XB_HD float iq1_m_d(const BlockIQ1_M& b) {
    const uint16_t bits = static_cast<uint16_t>((iq1_m_scale_word(b, 0) >> 12) | ((iq1_m_scale_word(b, 1) & 0xF000) >> 8) |
                                                ((iq1_m_scale_word(b, 2) & 0xF000) >> 4) | (iq1_m_scale_word(b, 3) & 0xF000));
    return f16_to_f32(bits);
}
// iq1: the codebook entry of group 4 ib + i (11-bit index) and whether its delta is negative.
XB_HD uint64_t iq1_entry(const BlockIQ1_S& b, int ib, int i) {
    return XB_IQ_GRID(kIq1sGrid, b.qs[4 * ib + i] | (((b.qh[ib] >> (3 * i)) & 7) << 8));
}
XB_HD bool iq1_negative_delta(const BlockIQ1_S& b, int ib, int /*i*/) { return (b.qh[ib] & 0x8000) != 0; }
XB_HD uint64_t iq1_entry(const BlockIQ1_M& b, int ib, int i) {
    return XB_IQ_GRID(kIq1sGrid, b.qs[4 * ib + i] | ((iq1_m_nibble(b, 4 * ib + i) & 7) << 8));
}
XB_HD bool iq1_negative_delta(const BlockIQ1_M& b, int ib, int i) { return (iq1_m_nibble(b, 4 * ib + i) & 8) != 0; }
// iq4_xs: the 6-bit scale of 32-value group ib, less its offset 32.
XB_HD int iq4xs_scale(const BlockIQ4_XS& b, int ib) {
    return (((b.scales_l[ib >> 1] >> (4 * (ib & 1))) & 0x0F) | (((b.scales_h >> (2 * ib)) & 3) << 4)) - 32;
}

inline constexpr float kIq1Delta = 0.125f;

// --- the scale of each group of 16 values, computed as ggml does -----------------------------------

XB_HD float iq2_scale(float d, int s) { return d * (0.5f + static_cast<float>(s)) * 0.25f; }

XB_HD float iq_scale(const BlockIQ2_XXS& b, int k) {
    return iq2_scale(f16_to_f32(b.d), static_cast<int>(iq2xxs_aux(b, k / 2) >> 28));
}
XB_HD float iq_scale(const BlockIQ2_XS& b, int k) { return iq2_scale(f16_to_f32(b.d), iq2_nibble_scale(b.scales, k)); }
XB_HD float iq_scale(const BlockIQ2_S& b, int k) { return iq2_scale(f16_to_f32(b.d), iq2_nibble_scale(b.scales, k)); }
XB_HD float iq_scale(const BlockIQ3_XXS& b, int k) {
    const int s = static_cast<int>(iq3xxs_aux(b, k / 2) >> 28);
    return f16_to_f32(b.d) * (0.5f + static_cast<float>(s)) * 0.5f;
}
XB_HD float iq_scale(const BlockIQ3_S& b, int k) {
    return f16_to_f32(b.d) * static_cast<float>(1 + 2 * iq3s_scale_field(b, k / 2));
}
XB_HD float iq_scale(const BlockIQ1_S& b, int k) {
    return f16_to_f32(b.d) * static_cast<float>(2 * iq1s_scale_field(b, k / 2) + 1);
}
XB_HD float iq_scale(const BlockIQ1_M& b, int k) {
    return iq1_m_d(b) * static_cast<float>(2 * iq1m_scale_field(b, k) + 1);
}
XB_HD float iq_scale(const BlockIQ4_NL& b, int /*k*/) { return f16_to_f32(b.d); }
XB_HD float iq_scale(const BlockIQ4_XS& b, int k) { return f16_to_f32(b.d) * static_cast<float>(iq4xs_scale(b, k / 2)); }

// --- the signed values of each group of 8 ------------------------------------------------------------

// Entry `entry`'s 8 coordinates (or two 4-coordinate entries, lo then hi) with the signs of `signs`.
XB_HD void signed_coordinates(uint64_t entry, int signs, int8_t* q) {
    for (int j = 0; j < 8; ++j) {
        const int v = grid_u8(entry, j);
        q[j] = static_cast<int8_t>((signs >> j) & 1 ? -v : v);
    }
}
XB_HD uint64_t two_entries(uint32_t lo, uint32_t hi) { return static_cast<uint64_t>(lo) | (static_cast<uint64_t>(hi) << 32); }

XB_HD void iq_group(const BlockIQ2_XXS& b, int g, int8_t* q) {
    const uint32_t aux = iq2xxs_aux(b, g / 4);
    signed_coordinates(XB_IQ_GRID(kIq2xxsGrid, b.qs[8 * (g / 4) + g % 4]), iq_sign_byte(static_cast<int>((aux >> (7 * (g % 4))) & 127)), q);
}
XB_HD void iq_group(const BlockIQ2_XS& b, int g, int8_t* q) {
    const int w = load_u16_at(b.qs + 2 * g);
    signed_coordinates(XB_IQ_GRID(kIq2xsGrid, w & 511), iq_sign_byte(w >> 9), q);
}
XB_HD void iq_group(const BlockIQ2_S& b, int g, int8_t* q) {
    signed_coordinates(XB_IQ_GRID(kIq2sGrid, iq2s_index(b, g / 4, g % 4)), b.signs[g], q);
}
XB_HD void iq_group(const BlockIQ3_XXS& b, int g, int8_t* q) {
    const int ib = g / 4, l = g % 4;
    const uint64_t entries = two_entries(XB_IQ_GRID(kIq3xxsGrid, b.qs[8 * ib + 2 * l]), XB_IQ_GRID(kIq3xxsGrid, b.qs[8 * ib + 2 * l + 1]));
    signed_coordinates(entries, iq_sign_byte(static_cast<int>((iq3xxs_aux(b, ib) >> (7 * l)) & 127)), q);
}
XB_HD void iq_group(const BlockIQ3_S& b, int g, int8_t* q) {
    const int ib = g / 4, j = 2 * (g % 4);
    const uint64_t entries = two_entries(XB_IQ_GRID(kIq3sGrid, iq3s_index(b, ib, j)), XB_IQ_GRID(kIq3sGrid, iq3s_index(b, ib, j + 1)));
    signed_coordinates(entries, b.signs[g], q);
}
// iq4: the low nibbles of a 32-value block's 16 bytes are values 0..15, the high ones 16..31.
XB_HD void iq4_group(const uint8_t* qs32, int g, int8_t* q) {
    for (int j = 0; j < 8; ++j) {
        const int e = 8 * (g % 4) + j;
        q[j] = static_cast<int8_t>(iq4_value(e < 16 ? (qs32[e] & 0x0F) : (qs32[e - 16] >> 4)));
    }
}
XB_HD void iq_group(const BlockIQ4_NL& b, int g, int8_t* q) { iq4_group(b.qs, g, q); }
XB_HD void iq_group(const BlockIQ4_XS& b, int g, int8_t* q) { iq4_group(b.qs + 16 * (g / 4), g, q); }

// iq1: 8 grid +- 1 (the delta of 1/8, times 8), so that every value is an exact integer.
XB_HD void iq1_group_times8(uint64_t entry, bool negative_delta, int8_t* q) {
    for (int j = 0; j < 8; ++j) q[j] = static_cast<int8_t>(8 * grid_i8(entry, j) + (negative_delta ? -1 : 1));
}

template <typename Block>
concept CodebookBlock = requires(const Block& b, int8_t* q) { iq_group(b, 0, q); };
template <typename Block>
concept Iq1Block = requires(const Block& b) { iq1_entry(b, 0, 0); };

// --- dequantization: sixteen values, ggml's arithmetic -------------------------------------------

// x = scale * value (iq2, iq3, iq4). ggml multiplies the scaled coordinate by the sign; rounding is
// symmetric in sign, so scaling the signed coordinate gives the same bits.
template <CodebookBlock Block>
XB_HD void dequantize_part(const Block& b, int part, float* y) {
    const float db = iq_scale(b, part);
    int8_t q[16];
    iq_group(b, 2 * part, q);
    iq_group(b, 2 * part + 1, q + 8);
    for (int j = 0; j < 16; ++j) y[j] = db * static_cast<float>(q[j]);
}

// x = dl * (grid + delta).
template <Iq1Block Block>
XB_HD void dequantize_part(const Block& b, int part, float* y) {
    const float dl = iq_scale(b, part);
    for (int h = 0; h < 2; ++h) {
        const int g = 2 * part + h;
        const uint64_t entry = iq1_entry(b, g / 4, g % 4);
        const float delta = iq1_negative_delta(b, g / 4, g % 4) ? -kIq1Delta : kIq1Delta;
        for (int j = 0; j < 8; ++j) y[8 * h + j] = dl * (static_cast<float>(grid_i8(entry, j)) + delta);
    }
}

// --- integer units ---------------------------------------------------------------------------------

template <CodebookBlock Block>
XB_HD void decode_unit(const Block& b, int unit, QuantUnit& out) {
    for (int h = 0; h < 2; ++h) {
        out.scale[h] = iq_scale(b, 2 * unit + h);
        out.offset[h] = 0.0f;
    }
    for (int g = 0; g < kUnitValues / 8; ++g) iq_group(b, 4 * unit + g, out.q + 8 * g);
}

// iq1: (grid +- 1/8) * dl = (8 grid +- 1) * dl / 8, so q = 8 grid +- 1 is exact.
template <Iq1Block Block>
XB_HD void decode_unit(const Block& b, int unit, QuantUnit& out) {
    for (int h = 0; h < 2; ++h) {
        out.scale[h] = iq_scale(b, 2 * unit + h) * kIq1Delta;
        out.offset[h] = 0.0f;
    }
    for (int i = 0; i < 4; ++i) iq1_group_times8(iq1_entry(b, unit, i), iq1_negative_delta(b, unit, i), out.q + 8 * i);
}

}  // namespace xb
