// The GGUF block formats of the quantized types, byte for byte those of ggml (and of llama.cpp's
// files), and the dequantization of one block, shared by the CPU and CUDA (XB_HD).
//
// A block holds a fixed number of consecutive elements of a row: 32 for the legacy types, 256 (a
// super-block) for the k-quants. Scales are f16 bit patterns except q8_K's f32. The arithmetic of
// each dequantization is ggml's, operation by operation, so results are bit-identical to ggml's and
// to the gguf Python package's; the products are kept apart from the sums (no fused multiply-add).
#pragma once

#include <cstddef>
#include <cstdint>
#include <cstring>
#include <type_traits>

#include "core/dtype.hpp"
#include "core/host_device.hpp"

namespace xb {

inline constexpr int kQK = 32;    // elements of a legacy block
inline constexpr int kQKK = 256;  // elements of a k-quant super-block

// Little-endian 16-bit words of quantized data. load_u16: p 2-aligned (inside a block with a 16-bit
// member, at an even offset), one 16-bit load on the device and on the host. load_u16_at: any
// alignment (blocks of bytes only, such as iq1_m's), assembled from two byte loads.
XB_HD uint16_t load_u16(const uint8_t* p) {
#if defined(__CUDA_ARCH__)
    return *reinterpret_cast<const uint16_t*>(p);
#else
    uint16_t v;
    std::memcpy(&v, p, sizeof(v));
    return v;
#endif
}
XB_HD uint16_t load_u16_at(const uint8_t* p) { return static_cast<uint16_t>(p[0] | (p[1] << 8)); }

// x = d * (q - 8); q's low nibbles are elements 0..15, high nibbles 16..31.
struct BlockQ4_0 {
    uint16_t d;
    uint8_t qs[kQK / 2];
};
// x = d * q + m.
struct BlockQ4_1 {
    uint16_t d;
    uint16_t m;
    uint8_t qs[kQK / 2];
};
// x = d * (q - 16); bit 4 of element j's q is bit j of qh (little-endian).
struct BlockQ5_0 {
    uint16_t d;
    uint8_t qh[4];
    uint8_t qs[kQK / 2];
};
// x = d * q + m.
struct BlockQ5_1 {
    uint16_t d;
    uint16_t m;
    uint8_t qh[4];
    uint8_t qs[kQK / 2];
};
// x = d * q.
struct BlockQ8_0 {
    uint16_t d;
    int8_t qs[kQK];
};
// Eight sub-blocks of 32: x = d * sc_j * q - dmin * m_j, with 6-bit scales and mins packed in
// `scales` (see k_scale_min); sub-blocks 2k and 2k+1 are the low and high nibbles of qs[32k..].
struct BlockQ4_K {
    uint16_t d;
    uint16_t dmin;
    uint8_t scales[12];
    uint8_t qs[kQKK / 2];
};
// As q4_K with a fifth bit: bit j of qh[l] is bit 4 of element l of sub-block j.
struct BlockQ5_K {
    uint16_t d;
    uint16_t dmin;
    uint8_t scales[12];
    uint8_t qh[kQKK / 8];
    uint8_t qs[kQKK / 2];
};
// Sixteen sub-blocks of 16: x = d * scales[e / 16] * (q - 32), q's low 4 bits in ql and high 2 in qh.
struct BlockQ6_K {
    uint8_t ql[kQKK / 2];
    uint8_t qh[kQKK / 4];
    int8_t scales[kQKK / 16];
    uint16_t d;
};
// The activation format of the k-quant dot products: x = d * q, with the sums of each 16 q's.
struct BlockQ8_K {
    float d;
    int8_t qs[kQKK];
    int16_t bsums[kQKK / 16];
};

// Values in one block of each struct: a k-quant super-block's 256, the legacy types' 32; the newer
// formats' structs say it themselves (kElems).
template <typename Block>
inline constexpr int kBlockElems = [] {
    if constexpr (requires { Block::kElems; }) {
        return Block::kElems;
    } else {
        return std::is_same_v<Block, BlockQ4_K> || std::is_same_v<Block, BlockQ5_K> ||
                       std::is_same_v<Block, BlockQ6_K> || std::is_same_v<Block, BlockQ8_K>
                   ? kQKK
                   : kQK;
    }
}();

static_assert(sizeof(BlockQ4_0) == 18 && sizeof(BlockQ4_1) == 20 && sizeof(BlockQ5_0) == 22 &&
              sizeof(BlockQ5_1) == 24 && sizeof(BlockQ8_0) == 34);
static_assert(sizeof(BlockQ4_K) == 144 && sizeof(BlockQ5_K) == 176 && sizeof(BlockQ6_K) == 210 &&
              sizeof(BlockQ8_K) == 292);

// a * b - c and a * b + c, rounded after each operation (ggml's order, never fused): nvcc fuses
// unless told not to; host code is compiled with -ffp-contract=off (CMakeLists.txt).
XB_HD float mul_then_sub(float a, float b, float c) {
#if defined(__CUDA_ARCH__)
    return __fsub_rn(__fmul_rn(a, b), c);
#else
    return a * b - c;
#endif
}
XB_HD float mul_then_add(float a, float b, float c) {
#if defined(__CUDA_ARCH__)
    return __fadd_rn(__fmul_rn(a, b), c);
#else
    return a * b + c;
#endif
}

// The 6-bit scale and min of sub-block j (0..7) of a q4_K / q5_K block.
XB_HD void k_scale_min(const uint8_t* scales, int j, int& scale, int& min) {
    if (j < 4) {
        scale = scales[j] & 63;
        min = scales[j + 4] & 63;
    } else {
        scale = (scales[j + 4] & 0x0F) | ((scales[j - 4] >> 6) << 4);
        min = (scales[j + 4] >> 4) | ((scales[j] >> 6) << 4);
    }
}

// --- one block to f32 ----------------------------------------------------------------------------

XB_HD void dequantize_block(const BlockQ4_0& b, float* y) {
    const float d = f16_to_f32(b.d);
    for (int j = 0; j < kQK / 2; ++j) {
        y[j] = d * static_cast<float>((b.qs[j] & 0x0F) - 8);
        y[j + kQK / 2] = d * static_cast<float>((b.qs[j] >> 4) - 8);
    }
}

XB_HD void dequantize_block(const BlockQ4_1& b, float* y) {
    const float d = f16_to_f32(b.d);
    const float m = f16_to_f32(b.m);
    for (int j = 0; j < kQK / 2; ++j) {
        y[j] = mul_then_add(d, static_cast<float>(b.qs[j] & 0x0F), m);
        y[j + kQK / 2] = mul_then_add(d, static_cast<float>(b.qs[j] >> 4), m);
    }
}

XB_HD uint32_t load_u32_le(const uint8_t* p) {
    return static_cast<uint32_t>(p[0]) | (static_cast<uint32_t>(p[1]) << 8) | (static_cast<uint32_t>(p[2]) << 16) |
           (static_cast<uint32_t>(p[3]) << 24);
}

XB_HD void dequantize_block(const BlockQ5_0& b, float* y) {
    const float d = f16_to_f32(b.d);
    const uint32_t qh = load_u32_le(b.qh);
    for (int j = 0; j < kQK / 2; ++j) {
        const int lo = (b.qs[j] & 0x0F) | static_cast<int>(((qh >> j) & 1u) << 4);
        const int hi = (b.qs[j] >> 4) | static_cast<int>(((qh >> (j + kQK / 2)) & 1u) << 4);
        y[j] = d * static_cast<float>(lo - 16);
        y[j + kQK / 2] = d * static_cast<float>(hi - 16);
    }
}

XB_HD void dequantize_block(const BlockQ5_1& b, float* y) {
    const float d = f16_to_f32(b.d);
    const float m = f16_to_f32(b.m);
    const uint32_t qh = load_u32_le(b.qh);
    for (int j = 0; j < kQK / 2; ++j) {
        const int lo = (b.qs[j] & 0x0F) | static_cast<int>(((qh >> j) & 1u) << 4);
        const int hi = (b.qs[j] >> 4) | static_cast<int>(((qh >> (j + kQK / 2)) & 1u) << 4);
        y[j] = mul_then_add(d, static_cast<float>(lo), m);
        y[j + kQK / 2] = mul_then_add(d, static_cast<float>(hi), m);
    }
}

XB_HD void dequantize_block(const BlockQ8_0& b, float* y) {
    const float d = f16_to_f32(b.d);
    for (int j = 0; j < kQK; ++j) y[j] = static_cast<float>(b.qs[j]) * d;
}

XB_HD void dequantize_block(const BlockQ4_K& b, float* y) {
    const float d = f16_to_f32(b.d);
    const float dmin = f16_to_f32(b.dmin);
    for (int pair = 0; pair < 4; ++pair) {
        const uint8_t* q = b.qs + 32 * pair;
        for (int half = 0; half < 2; ++half) {
            int sc = 0, m = 0;
            k_scale_min(b.scales, 2 * pair + half, sc, m);
            const float ds = d * static_cast<float>(sc);
            const float dm = dmin * static_cast<float>(m);
            for (int l = 0; l < 32; ++l) {
                const int v = half == 0 ? (q[l] & 0x0F) : (q[l] >> 4);
                *y++ = mul_then_sub(ds, static_cast<float>(v), dm);
            }
        }
    }
}

XB_HD void dequantize_block(const BlockQ5_K& b, float* y) {
    const float d = f16_to_f32(b.d);
    const float dmin = f16_to_f32(b.dmin);
    for (int pair = 0; pair < 4; ++pair) {
        const uint8_t* q = b.qs + 32 * pair;
        for (int half = 0; half < 2; ++half) {
            const int j = 2 * pair + half;
            int sc = 0, m = 0;
            k_scale_min(b.scales, j, sc, m);
            const float ds = d * static_cast<float>(sc);
            const float dm = dmin * static_cast<float>(m);
            for (int l = 0; l < 32; ++l) {
                const int lo = half == 0 ? (q[l] & 0x0F) : (q[l] >> 4);
                const int v = lo | (((b.qh[l] >> j) & 1) << 4);
                *y++ = mul_then_sub(ds, static_cast<float>(v), dm);
            }
        }
    }
}

XB_HD void dequantize_block(const BlockQ6_K& b, float* y) {
    const float d = f16_to_f32(b.d);
    for (int e = 0; e < kQKK; ++e) {
        // Element e: half h of 128, group g of 32 within it, position l within the group.
        const int h = e / 128, g = (e % 128) / 32, l = e % 32;
        const uint8_t ql = b.ql[64 * h + 32 * (g % 2) + l];
        const int lo = g < 2 ? (ql & 0x0F) : (ql >> 4);
        const int hi = (b.qh[32 * h + l] >> (2 * g)) & 3;
        const float ds = d * static_cast<float>(b.scales[e / 16]);
        y[e] = ds * static_cast<float>((lo | (hi << 4)) - 32);
    }
}

XB_HD void dequantize_block(const BlockQ8_K& b, float* y) {
    for (int j = 0; j < kQKK; ++j) y[j] = b.d * static_cast<float>(b.qs[j]);
}

// --- sixteen consecutive values of a block to f32 ------------------------------------------------------
// dequantize_part(b, part, y): values 16 * part .. 16 * part + 15 of the block, the same bits as
// dequantize_block gives them (the GPU's tile kernels decode a block piece by piece).

XB_HD void dequantize_part(const BlockQ4_0& b, int part, float* y) {
    const float d = f16_to_f32(b.d);
    for (int j = 0; j < 16; ++j) {
        const int q = part == 0 ? (b.qs[j] & 0x0F) : (b.qs[j] >> 4);
        y[j] = d * static_cast<float>(q - 8);
    }
}

XB_HD void dequantize_part(const BlockQ4_1& b, int part, float* y) {
    const float d = f16_to_f32(b.d);
    const float m = f16_to_f32(b.m);
    for (int j = 0; j < 16; ++j) {
        const int q = part == 0 ? (b.qs[j] & 0x0F) : (b.qs[j] >> 4);
        y[j] = mul_then_add(d, static_cast<float>(q), m);
    }
}

// Value e (0..31) of a q5_0 / q5_1 block: its nibble and its fifth bit.
XB_HD int q5_value(const uint8_t* qs, uint32_t qh, int e) {
    const int nibble = e < kQK / 2 ? (qs[e] & 0x0F) : (qs[e - kQK / 2] >> 4);
    return nibble | static_cast<int>(((qh >> e) & 1u) << 4);
}

XB_HD void dequantize_part(const BlockQ5_0& b, int part, float* y) {
    const float d = f16_to_f32(b.d);
    const uint32_t qh = load_u32_le(b.qh);
    for (int j = 0; j < 16; ++j) y[j] = d * static_cast<float>(q5_value(b.qs, qh, 16 * part + j) - 16);
}

XB_HD void dequantize_part(const BlockQ5_1& b, int part, float* y) {
    const float d = f16_to_f32(b.d);
    const float m = f16_to_f32(b.m);
    const uint32_t qh = load_u32_le(b.qh);
    for (int j = 0; j < 16; ++j) y[j] = mul_then_add(d, static_cast<float>(q5_value(b.qs, qh, 16 * part + j)), m);
}

XB_HD void dequantize_part(const BlockQ8_0& b, int part, float* y) {
    const float d = f16_to_f32(b.d);
    for (int j = 0; j < 16; ++j) y[j] = static_cast<float>(b.qs[16 * part + j]) * d;
}

// q4_K / q5_K: part p is half of sub-block p / 2.
template <typename Block, bool kFifthBit>
XB_HD void dequantize_k_affine_part(const Block& b, int part, float* y) {
    const int sub = part / 2;
    const int l0 = 16 * (part % 2);
    int sc = 0, m = 0;
    k_scale_min(b.scales, sub, sc, m);
    const float ds = f16_to_f32(b.d) * static_cast<float>(sc);
    const float dm = f16_to_f32(b.dmin) * static_cast<float>(m);
    const uint8_t* q = b.qs + 32 * (sub / 2);
    for (int j = 0; j < 16; ++j) {
        const int l = l0 + j;
        int v = sub % 2 == 0 ? (q[l] & 0x0F) : (q[l] >> 4);
        if constexpr (kFifthBit) v |= ((b.qh[l] >> sub) & 1) << 4;
        y[j] = mul_then_sub(ds, static_cast<float>(v), dm);
    }
}

XB_HD void dequantize_part(const BlockQ4_K& b, int part, float* y) { dequantize_k_affine_part<BlockQ4_K, false>(b, part, y); }
XB_HD void dequantize_part(const BlockQ5_K& b, int part, float* y) { dequantize_k_affine_part<BlockQ5_K, true>(b, part, y); }

XB_HD void dequantize_part(const BlockQ6_K& b, int part, float* y) {
    const float d = f16_to_f32(b.d);
    const float ds = d * static_cast<float>(b.scales[part]);
    for (int j = 0; j < 16; ++j) {
        const int e = 16 * part + j;
        const int h = e / 128, g = (e % 128) / 32, l = e % 32;
        const uint8_t ql = b.ql[64 * h + 32 * (g % 2) + l];
        const int lo = g < 2 ? (ql & 0x0F) : (ql >> 4);
        const int hi = (b.qh[32 * h + l] >> (2 * g)) & 3;
        y[j] = ds * static_cast<float>((lo | (hi << 4)) - 32);
    }
}

XB_HD void dequantize_part(const BlockQ8_K& b, int part, float* y) {
    for (int j = 0; j < 16; ++j) y[j] = b.d * static_cast<float>(b.qs[16 * part + j]);
}

}  // namespace xb
