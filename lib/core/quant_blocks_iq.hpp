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

XB_HD uint32_t load_u32_at(const uint8_t* p) { return load_u32_le(p); }
XB_HD uint16_t load_u16_at(const uint8_t* p) {
    return static_cast<uint16_t>(p[0] | (p[1] << 8));
}

// --- the value of one element before scaling, and the scale of its group of 16 ---------------------
// iq_value(b, e): the signed codebook coordinate of value e (sign applied); iq_scale(b, k): the
// float scale of values 16k .. 16k + 15, computed as ggml does.

XB_HD float iq2_scale(float d, int s) { return d * (0.5f + static_cast<float>(s)) * 0.25f; }

XB_HD int iq_value(const BlockIQ2_XXS& b, int e) {
    const int ib = e / 32, l = (e % 32) / 8, j = e % 8;
    const uint32_t aux = load_u32_at(b.qs + 8 * ib + 4);
    const int signs = iq_sign_byte(static_cast<int>((aux >> (7 * l)) & 127));
    const int v = grid_u8(XB_IQ_GRID(kIq2xxsGrid, b.qs[8 * ib + l]), j);
    return (signs >> j) & 1 ? -v : v;
}
XB_HD float iq_scale(const BlockIQ2_XXS& b, int k) {
    return iq2_scale(f16_to_f32(b.d), static_cast<int>(load_u32_at(b.qs + 8 * (k / 2) + 4) >> 28));
}

XB_HD int iq_value(const BlockIQ2_XS& b, int e) {
    const int g = e / 8, j = e % 8;
    const int w = load_u16_at(b.qs + 2 * g);
    const int signs = iq_sign_byte(w >> 9);
    const int v = grid_u8(XB_IQ_GRID(kIq2xsGrid, w & 511), j);
    return (signs >> j) & 1 ? -v : v;
}
XB_HD float iq_scale(const BlockIQ2_XS& b, int k) {
    return iq2_scale(f16_to_f32(b.d), (b.scales[k / 2] >> (4 * (k % 2))) & 0x0F);
}

XB_HD int iq_value(const BlockIQ2_S& b, int e) {
    const int g = e / 8, j = e % 8;
    const int index = b.qs[g] | (((b.qh[g / 4] >> (2 * (g % 4))) & 3) << 8);
    const int v = grid_u8(XB_IQ_GRID(kIq2sGrid, index), j);
    return (b.signs[g] >> j) & 1 ? -v : v;
}
XB_HD float iq_scale(const BlockIQ2_S& b, int k) {
    return iq2_scale(f16_to_f32(b.d), (b.scales[k / 2] >> (4 * (k % 2))) & 0x0F);
}

XB_HD int iq_value(const BlockIQ3_XXS& b, int e) {
    const int ib = e / 32, l = (e % 32) / 8, j = e % 8;
    const uint32_t aux = load_u32_at(b.qs + kQKK / 4 + 4 * ib);
    const int signs = iq_sign_byte(static_cast<int>((aux >> (7 * l)) & 127));
    const int v = grid_u8(XB_IQ_GRID(kIq3xxsGrid, b.qs[8 * ib + 2 * l + j / 4]), j % 4);
    return (signs >> j) & 1 ? -v : v;
}
XB_HD float iq_scale(const BlockIQ3_XXS& b, int k) {
    const int s = static_cast<int>(load_u32_at(b.qs + kQKK / 4 + 4 * (k / 2)) >> 28);
    return f16_to_f32(b.d) * (0.5f + static_cast<float>(s)) * 0.5f;
}

XB_HD int iq_value(const BlockIQ3_S& b, int e) {
    const int g = e / 4, j = e % 4;
    const int index = b.qs[g] | (((b.qh[g / 8] >> (g % 8)) & 1) << 8);
    const int v = grid_u8(XB_IQ_GRID(kIq3sGrid, index), j);
    return (b.signs[e / 8] >> (e % 8)) & 1 ? -v : v;
}
XB_HD float iq_scale(const BlockIQ3_S& b, int k) {
    const int ib = k / 2;
    return f16_to_f32(b.d) * static_cast<float>(1 + 2 * ((b.scales[ib / 2] >> (4 * (ib % 2))) & 0x0F));
}

// iq1: the codebook coordinate (-1, 0, 1) and whether delta is negative, per value.
XB_HD int iq1_coordinate(const BlockIQ1_S& b, int e) {
    const int g = e / 8;
    const int index = b.qs[g] | (((b.qh[g / 4] >> (3 * (g % 4))) & 7) << 8);
    return grid_i8(XB_IQ_GRID(kIq1sGrid, index), e % 8);
}
XB_HD bool iq1_negative_delta(const BlockIQ1_S& b, int e) { return (b.qh[e / 32] & 0x8000) != 0; }
XB_HD uint64_t iq1_entry(const BlockIQ1_S& b, int g) {
    return XB_IQ_GRID(kIq1sGrid, b.qs[g] | (((b.qh[g / 4] >> (3 * (g % 4))) & 7) << 8));
}
XB_HD float iq_scale(const BlockIQ1_S& b, int k) {
    return f16_to_f32(b.d) * static_cast<float>(2 * ((b.qh[k / 2] >> 12) & 7) + 1);
}

XB_HD int iq1_m_nibble(const BlockIQ1_M& b, int g) { return (b.qh[g / 2] >> (4 * (g % 2))) & 0x0F; }
XB_HD int iq1_coordinate(const BlockIQ1_M& b, int e) {
    const int g = e / 8;
    const int index = b.qs[g] | ((iq1_m_nibble(b, g) & 7) << 8);
    return grid_i8(XB_IQ_GRID(kIq1sGrid, index), e % 8);
}
XB_HD bool iq1_negative_delta(const BlockIQ1_M& b, int e) { return (iq1_m_nibble(b, e / 8) & 8) != 0; }
XB_HD uint64_t iq1_entry(const BlockIQ1_M& b, int g) {
    return XB_IQ_GRID(kIq1sGrid, b.qs[g] | ((iq1_m_nibble(b, g) & 7) << 8));
}
XB_HD uint16_t iq1_m_scale_word(const BlockIQ1_M& b, int i) { return load_u16_at(b.scales + 2 * i); }
XB_HD float iq1_m_d(const BlockIQ1_M& b) {
    const uint16_t bits = static_cast<uint16_t>((iq1_m_scale_word(b, 0) >> 12) | ((iq1_m_scale_word(b, 1) & 0xF000) >> 8) |
                                                ((iq1_m_scale_word(b, 2) & 0xF000) >> 4) | (iq1_m_scale_word(b, 3) & 0xF000));
    return f16_to_f32(bits);
}
XB_HD float iq_scale(const BlockIQ1_M& b, int k) {
    const int s = (iq1_m_scale_word(b, k / 4) >> (3 * (k % 4))) & 7;
    return iq1_m_d(b) * static_cast<float>(2 * s + 1);
}

inline constexpr float kIq1Delta = 0.125f;

XB_HD int iq_value(const BlockIQ4_NL& b, int e) {
    return iq4_value(e < 16 ? (b.qs[e] & 0x0F) : (b.qs[e - 16] >> 4));
}
XB_HD float iq_scale(const BlockIQ4_NL& b, int /*k*/) { return f16_to_f32(b.d); }

XB_HD int iq_value(const BlockIQ4_XS& b, int e) {
    const int ib = e / 32, l = e % 32;
    const uint8_t* q = b.qs + 16 * ib;
    return iq4_value(l < 16 ? (q[l] & 0x0F) : (q[l - 16] >> 4));
}
XB_HD float iq_scale(const BlockIQ4_XS& b, int k) {
    const int ib = k / 2;
    const int ls = ((b.scales_l[ib / 2] >> (4 * (ib % 2))) & 0x0F) | (((b.scales_h >> (2 * ib)) & 3) << 4);
    return f16_to_f32(b.d) * static_cast<float>(ls - 32);
}

// --- dequantization: sixteen values, ggml's arithmetic -------------------------------------------

template <typename Block>
concept CodebookBlock = requires(const Block& b) { iq_value(b, 0); };
template <typename Block>
concept Iq1Block = requires(const Block& b) { iq1_coordinate(b, 0); };

// x = scale * value (iq2, iq3, iq4). ggml multiplies the scaled coordinate by the sign; rounding is
// symmetric in sign, so scaling the signed coordinate gives the same bits.
template <CodebookBlock Block>
XB_HD void dequantize_part(const Block& b, int part, float* y) {
    const float db = iq_scale(b, part);
    for (int j = 0; j < 16; ++j) y[j] = db * static_cast<float>(iq_value(b, 16 * part + j));
}

// x = dl * (grid + delta).
template <Iq1Block Block>
XB_HD void dequantize_part(const Block& b, int part, float* y) {
    const float dl = iq_scale(b, part);
    for (int j = 0; j < 16; ++j) {
        const int e = 16 * part + j;
        const float delta = iq1_negative_delta(b, e) ? -kIq1Delta : kIq1Delta;
        y[j] = dl * (static_cast<float>(iq1_coordinate(b, e)) + delta);
    }
}

// --- integer units ---------------------------------------------------------------------------------
// Eight values at a time (group g: values 8g .. 8g + 7): the codebook entry and the signs are read
// once per group rather than once per value (iq_value), for the dot products' speed.

// Entry `entry`'s 8 coordinates (or two 4-coordinate entries, lo then hi) with the signs of `signs`.
XB_HD void signed_coordinates(uint64_t entry, int signs, int8_t* q) {
    for (int j = 0; j < 8; ++j) {
        const int v = grid_u8(entry, j);
        q[j] = static_cast<int8_t>((signs >> j) & 1 ? -v : v);
    }
}
XB_HD uint64_t two_entries(uint32_t lo, uint32_t hi) { return static_cast<uint64_t>(lo) | (static_cast<uint64_t>(hi) << 32); }

XB_HD void iq_group(const BlockIQ2_XXS& b, int g, int8_t* q) {
    const uint32_t aux = load_u32_at(b.qs + 8 * (g / 4) + 4);
    signed_coordinates(XB_IQ_GRID(kIq2xxsGrid, b.qs[8 * (g / 4) + g % 4]), iq_sign_byte(static_cast<int>((aux >> (7 * (g % 4))) & 127)), q);
}
XB_HD void iq_group(const BlockIQ2_XS& b, int g, int8_t* q) {
    const int w = load_u16_at(b.qs + 2 * g);
    signed_coordinates(XB_IQ_GRID(kIq2xsGrid, w & 511), iq_sign_byte(w >> 9), q);
}
XB_HD void iq_group(const BlockIQ2_S& b, int g, int8_t* q) {
    const int index = b.qs[g] | (((b.qh[g / 4] >> (2 * (g % 4))) & 3) << 8);
    signed_coordinates(XB_IQ_GRID(kIq2sGrid, index), b.signs[g], q);
}
XB_HD void iq_group(const BlockIQ3_XXS& b, int g, int8_t* q) {
    const int ib = g / 4, l = g % 4;
    const uint32_t aux = load_u32_at(b.qs + kQKK / 4 + 4 * ib);
    const uint64_t entries = two_entries(XB_IQ_GRID(kIq3xxsGrid, b.qs[8 * ib + 2 * l]), XB_IQ_GRID(kIq3xxsGrid, b.qs[8 * ib + 2 * l + 1]));
    signed_coordinates(entries, iq_sign_byte(static_cast<int>((aux >> (7 * l)) & 127)), q);
}
XB_HD void iq_group(const BlockIQ3_S& b, int g, int8_t* q) {
    const auto entry = [&](int e4) { return XB_IQ_GRID(kIq3sGrid, b.qs[e4] | (((b.qh[e4 / 8] >> (e4 % 8)) & 1) << 8)); };
    signed_coordinates(two_entries(entry(2 * g), entry(2 * g + 1)), b.signs[g], q);
}
XB_HD void iq_group(const BlockIQ4_NL& b, int g, int8_t* q) {
    for (int j = 0; j < 8; ++j) q[j] = static_cast<int8_t>(iq_value(b, 8 * g + j));
}
XB_HD void iq_group(const BlockIQ4_XS& b, int g, int8_t* q) {
    for (int j = 0; j < 8; ++j) q[j] = static_cast<int8_t>(iq_value(b, 8 * g + j));
}

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
    for (int g = 4 * unit; g < 4 * unit + 4; ++g) {
        const int8_t delta = iq1_negative_delta(b, 8 * g) ? -1 : 1;
        const uint64_t entry = iq1_entry(b, g);
        for (int j = 0; j < 8; ++j) out.q[8 * (g % 4) + j] = static_cast<int8_t>(8 * grid_i8(entry, j) + delta);
    }
}

}  // namespace xb
