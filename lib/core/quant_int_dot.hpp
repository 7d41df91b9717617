// Integer dot products of quantized weights with 8-bit activations, one piece of a block at a time,
// as the CUDA quantized mat-vec kernels compute them (XB_HD: the CPU tests run the same code).
//
// Activations: each column of K values is quantized in blocks of 32 to int8 with one Q8Scale per
// block (d = max|x| / 127, s = d * sum(q), both stored rounded to f16 as ggml's q8_0 / q8_1 blocks
// hold them), the CPU's rounding (q8_step, q8_round, q8_stored_scale). The values and
// the scales are kept in two arrays (Q8Columns), so that every block's 32 values start 16 bytes
// apart from the base and can be read with 16-byte loads.
//
// Weights: a block of each quantized type is cut into Q8Dot<Block>::kUnits units (kWideLoads: the
// unit's quants can be read 16 bytes at a time when the rows are 16-byte aligned); a GPU thread
// takes one unit and dots it with the matching activations of kCols columns (a weight read once
// serves every column), four int8 products at a time on 32-bit words (dot4_i8, the device's
// dp4a). The sum of a block's units is the block's dot product; offsets (q4_0's -8, q5_0's -16,
// q6_K's -32) and the k-quants' minima are taken out through the activations' sums, exactly.
#pragma once

#include <cstdint>
#if !defined(__CUDA_ARCH__)
#include <cmath>
#include <cstring>
#endif

#include "core/dtype.hpp"
#include "core/host_device.hpp"
#include "core/quant_formats.hpp"

namespace xb {

// --- 8-bit activation blocks -----------------------------------------------------------------------

inline constexpr int kQ8Block = 32;  // activations per scale

struct Q8Scale {
    float d;  // step: x ~ d * q
    float s;  // d * sum(q) over the block
};

// The step of a block whose largest magnitude is amax, and its inverse (0 for an all-zero block).
XB_HD float q8_step(float amax) { return amax / 127; }
// A block's scale as stored: its step, and d * sum(q), each rounded to f16 as ggml's q8_0 and q8_1
// blocks store them (the q's are rounded with the unrounded step's inverse, as ggml does). With
// this, xbackend's products of the 32-value formats give llama.cpp's numbers.
XB_HD Q8Scale q8_stored_scale(float d, int sum_q) {
    return Q8Scale{f16_to_f32(f32_to_f16(d)), f16_to_f32(f32_to_f16(d * static_cast<float>(sum_q)))};
}
XB_HD float q8_inverse_step(float d) { return d != 0.0f ? 1.0f / d : 0.0f; }
// x rounded to a step (half away from zero), within [-127, 127]; NaN gives -127.
XB_HD int q8_round(float x, float inverse_step) {
    const float r = roundf(x * inverse_step);
    return static_cast<int>(fminf(fmaxf(r, -127.0f), 127.0f));
}

// kCols columns of quantized activations, from the element where a weight block starts.
struct Q8Cols {
    const int8_t* qs = nullptr;     // column 0's values
    const Q8Scale* ds = nullptr;    // column 0's scales (one per kQ8Block values)
    int64_t qs_stride = 0;          // values from one column to the next
    int64_t ds_stride = 0;          // scales from one column to the next
};

// --- loads -------------------------------------------------------------------------------------------

// Little-endian words of quantized data. The block types' alignment decides which load a piece can
// use: 2 bytes (sizes 18, 22, 34, 210: load_u16, core/quant_blocks.hpp), 4 bytes (20, 24, 292), 16
// bytes (q4_K's and q5_K's quants when the rows are 16-byte aligned, see Q8Dot's kWide).
XB_HD int load_i32_a2(const uint8_t* p) {
    return static_cast<int>(static_cast<uint32_t>(load_u16(p)) | (static_cast<uint32_t>(load_u16(p + 2)) << 16));
}
XB_HD int load_i32_a4(const uint8_t* p) {
#if defined(__CUDA_ARCH__)
    return *reinterpret_cast<const int*>(p);
#else
    int v;
    std::memcpy(&v, p, sizeof(v));
    return v;
#endif
}
XB_HD float load_f32_a4(const uint8_t* p) {
    return bits_float(static_cast<uint32_t>(load_i32_a4(p)));
}
// Four words at p; with kWide one 16-byte load (p 16-byte aligned), else four 4-byte loads.
template <bool kWide>
XB_HD void load_i32x4(const uint8_t* p, int (&v)[4]) {
#if defined(__CUDA_ARCH__)
    if constexpr (kWide) {
        const int4 w = *reinterpret_cast<const int4*>(p);
        v[0] = w.x;
        v[1] = w.y;
        v[2] = w.z;
        v[3] = w.w;
    } else {
        for (int i = 0; i < 4; ++i) v[i] = load_i32_a4(p + 4 * i);
    }
#else
    for (int i = 0; i < 4; ++i) v[i] = load_i32_a4(p + 4 * i);
#endif
}
// Sixteen activations (16-byte aligned, see Q8Cols).
XB_HD void load_q8x16(const int8_t* p, int (&v)[4]) { load_i32x4<true>(reinterpret_cast<const uint8_t*>(p), v); }

// --- integer arithmetic --------------------------------------------------------------------------------

// c + the sum of the four products of a's and b's signed bytes (the device's dp4a).
XB_HD int dot4_i8(int a, int b, int c) {
#if defined(__CUDA_ARCH__)
    return __dp4a(a, b, c);
#else
    for (int i = 0; i < 4; ++i) {
        c += static_cast<int>(static_cast<int8_t>(static_cast<uint32_t>(a) >> (8 * i))) *
             static_cast<int>(static_cast<int8_t>(static_cast<uint32_t>(b) >> (8 * i)));
    }
    return c;
#endif
}
inline constexpr int kOnes8 = 0x01010101;  // dot4_i8(kOnes8, b, 0): the sum of b's bytes

XB_HD int low_nibbles(int v) { return v & 0x0F0F0F0F; }
XB_HD int high_nibbles(int v) { return static_cast<int>((static_cast<uint32_t>(v) >> 4) & 0x0F0F0F0Fu); }
// Bits 0..3 of `bits` moved to bit 4 of bytes 0..3 (the fifth bit of q5_0 / q5_1 values).
XB_HD int fifth_bits(uint32_t bits) {
    return static_cast<int>(((bits << 4) & 0x10u) | ((bits << 11) & 0x1000u) | ((bits << 18) & 0x100000u) |
                            ((bits << 25) & 0x10000000u));
}
// Bit `shift` of each byte of v, moved to bit 4 (q5_K), or bits shift, shift + 1 to bits 4, 5 (q6_K).
XB_HD int byte_bit_to_4(int v, int shift) {
    return static_cast<int>(((static_cast<uint32_t>(v) >> shift) & 0x01010101u) << 4);
}
XB_HD int byte_bits2_to_4(int v, int shift) {
    return static_cast<int>(((static_cast<uint32_t>(v) >> shift) & 0x03030303u) << 4);
}

// --- the units of each block type ------------------------------------------------------------------------

template <typename Block>
struct Q8Dot;

// The legacy types: one unit per block of 32, its quants against the 32 activations of one scale.
// sum_q: for each column, sum(w_q * a_q) over the block, and the block's Q8Scale.
template <int kCols, typename Words>
XB_HD void legacy_dots(const Words& w, const Q8Cols& a, int64_t e0, int (&sum_q)[kCols], Q8Scale (&scale)[kCols]) {
    for (int c = 0; c < kCols; ++c) {
        const int8_t* q = a.qs + c * a.qs_stride + e0;
        int lo[4], hi[4];
        load_q8x16(q, lo);
        load_q8x16(q + 16, hi);
        sum_q[c] = w(lo, hi);
        scale[c] = a.ds[c * a.ds_stride + e0 / kQ8Block];
    }
}

// The sum of a block's 32 activations (lo: 0..15, hi: 16..31), exactly.
XB_HD int byte_sum(const int (&lo)[4], const int (&hi)[4]) {
    int sum = 0;
    for (int i = 0; i < 4; ++i) sum = dot4_i8(kOnes8, hi[i], dot4_i8(kOnes8, lo[i], sum));
    return sum;
}

// The legacy units' integer dots: four words of nibbles (low: values 0..15, high: 16..31), or
// eight words of bytes (values 0..31), against the block's 32 activations.
XB_HD int nibble_dot(const int (&v)[4], const int (&lo)[4], const int (&hi)[4]) {
    int acc = 0;
    for (int i = 0; i < 4; ++i) acc = dot4_i8(high_nibbles(v[i]), hi[i], dot4_i8(low_nibbles(v[i]), lo[i], acc));
    return acc;
}
XB_HD int byte_dot(const int (&v)[8], const int (&lo)[4], const int (&hi)[4]) {
    int acc = 0;
    for (int i = 0; i < 4; ++i) acc = dot4_i8(v[4 + i], hi[i], dot4_i8(v[i], lo[i], acc));
    return acc;
}

// q5_0 / q5_1: the low and high nibbles with their fifth bits from qh (bits 0..15 and 16..31).
XB_HD int q5_dot(const int (&v)[4], uint32_t qh, const int (&lo)[4], const int (&hi)[4]) {
    int acc = 0;
    for (int i = 0; i < 4; ++i) {
        acc = dot4_i8(low_nibbles(v[i]) | fifth_bits(qh >> (4 * i)), lo[i], acc);
        acc = dot4_i8(high_nibbles(v[i]) | fifth_bits(qh >> (4 * i + 16)), hi[i], acc);
    }
    return acc;
}

// The legacy 4- and 5-bit types, one unit per block: d (f16) at byte 0, then the minimum m (f16,
// at kM; -1: none), the fifth bits (at kQh; -1: none) and 16 bytes of nibbles (at kQs). Values are
// d * (q - kOffset) without a minimum, d * q + m with one. kAligned4: the block's size is a multiple
// of 4 bytes (20, 24), so its words can be read whole.
template <int kM, int kQh, int kQs, int kOffset, bool kAligned4>
struct LegacyNibbles {
    static constexpr int kUnits = 1;
    static constexpr bool kWideLoads = false;

    XB_HD static int word(const uint8_t* p) { return kAligned4 ? load_i32_a4(p) : load_i32_a2(p); }

    template <int kCols, bool kWide = false>
    XB_HD static void dot(const uint8_t* block, int /*unit*/, const Q8Cols& a, int64_t e0, float (&sum)[kCols]) {
        const float d = f16_to_f32(load_u16(block));
        int v[4];
        for (int i = 0; i < 4; ++i) v[i] = word(block + kQs + 4 * i);
        const auto qh = kQh >= 0 ? static_cast<uint32_t>(word(block + kQh)) : 0u;
        int sum_q[kCols];
        Q8Scale s[kCols];
        // Without a minimum, the offset comes off in integers (the activations' exact sum), as
        // ggml's q8_0 blocks have no stored sum; with one, the minimum meets the stored sum s, as
        // ggml's q8_1 blocks give it.
        legacy_dots<kCols>(
            [&](const int (&lo)[4], const int (&hi)[4]) {
                const int dot = kQh >= 0 ? q5_dot(v, qh, lo, hi) : nibble_dot(v, lo, hi);
                return kM >= 0 ? dot : dot - kOffset * byte_sum(lo, hi);
            },
            a, e0, sum_q, s);
        if constexpr (kM >= 0) {
            const float m = f16_to_f32(load_u16(block + kM));
            for (int c = 0; c < kCols; ++c) sum[c] += d * s[c].d * static_cast<float>(sum_q[c]) + m * s[c].s;
        } else {
            for (int c = 0; c < kCols; ++c) sum[c] += d * (s[c].d * static_cast<float>(sum_q[c]));
        }
    }
};

template <>
struct Q8Dot<BlockQ4_0> : LegacyNibbles<-1, -1, 2, 8, false> {};
template <>
struct Q8Dot<BlockQ4_1> : LegacyNibbles<2, -1, 4, 0, true> {};
template <>
struct Q8Dot<BlockQ5_0> : LegacyNibbles<-1, 2, 6, 16, false> {};
template <>
struct Q8Dot<BlockQ5_1> : LegacyNibbles<2, 4, 8, 0, true> {};

template <>
struct Q8Dot<BlockQ8_0> {
    static constexpr int kUnits = 1;
    static constexpr bool kWideLoads = false;
    template <int kCols, bool kWide = false>
    XB_HD static void dot(const uint8_t* block, int /*unit*/, const Q8Cols& a, int64_t e0, float (&sum)[kCols]) {
        const float d = f16_to_f32(load_u16(block));
        int v[8];
        for (int i = 0; i < 8; ++i) v[i] = load_i32_a2(block + 2 + 4 * i);
        int sum_q[kCols];
        Q8Scale s[kCols];
        legacy_dots<kCols>(
            [&](const int (&lo)[4], const int (&hi)[4]) { return byte_dot(v, lo, hi); },
            a, e0, sum_q, s);
        for (int c = 0; c < kCols; ++c) sum[c] += d * s[c].d * static_cast<float>(sum_q[c]);
    }
};

// The k-quants' units each hold 16 values of two sub-blocks (lo and hi): for each column, the dot
// of those values with their activations (`dot`), the sum of the activations (`sum`, for minima and
// offsets) and the two activation scales.
template <int kCols>
struct PairDots {
    int dot_lo[kCols], dot_hi[kCols];
    int sum_lo[kCols], sum_hi[kCols];
    float d_lo[kCols], d_hi[kCols];
};

// lo / hi: the unit's 16 values of each sub-block as bytes; e_lo / e_hi: the index of their first
// activation from the block's start.
template <int kCols>
XB_HD void pair_dots(const int (&lo)[4], const int (&hi)[4], const Q8Cols& a, int64_t e0, int e_lo, int e_hi,
                     PairDots<kCols>& out) {
    for (int c = 0; c < kCols; ++c) {
        const int8_t* q = a.qs + c * a.qs_stride + e0;
        int alo[4], ahi[4];
        load_q8x16(q + e_lo, alo);
        load_q8x16(q + e_hi, ahi);
        int dl = 0, dh = 0, sl = 0, sh = 0;
        for (int i = 0; i < 4; ++i) {
            dl = dot4_i8(lo[i], alo[i], dl);
            dh = dot4_i8(hi[i], ahi[i], dh);
            sl = dot4_i8(kOnes8, alo[i], sl);
            sh = dot4_i8(kOnes8, ahi[i], sh);
        }
        out.dot_lo[c] = dl;
        out.dot_hi[c] = dh;
        out.sum_lo[c] = sl;
        out.sum_hi[c] = sh;
        const Q8Scale* ds = a.ds + c * a.ds_stride + e0 / kQ8Block;
        out.d_lo[c] = ds[e_lo / kQ8Block].d;
        out.d_hi[c] = ds[e_hi / kQ8Block].d;
    }
}

// q4_K and q5_K: unit u holds 16 bytes of quants of sub-block pair p = u / 2 (low nibbles:
// sub-block 2p, high: 2p + 1), from byte 16 * (u % 2) of the pair's 32.
template <int kCols, bool kFifthBit, bool kWide>
XB_HD void k_affine_dot(const uint8_t* block, int qh_offset, int qs_offset, int unit, const Q8Cols& a, int64_t e0,
                        float (&sum)[kCols]) {
    const int pair = unit / 2;
    const int l0 = 16 * (unit % 2);
    const float d = f16_to_f32(load_u16(block));
    const float dmin = f16_to_f32(load_u16(block + 2));
    int sc_lo = 0, m_lo = 0, sc_hi = 0, m_hi = 0;
    k_scale_min(block + 4, 2 * pair, sc_lo, m_lo);
    k_scale_min(block + 4, 2 * pair + 1, sc_hi, m_hi);
    int v[4];
    load_i32x4<kWide>(block + qs_offset + 32 * pair + l0, v);
    int lo[4], hi[4];
    for (int i = 0; i < 4; ++i) {
        lo[i] = low_nibbles(v[i]);
        hi[i] = high_nibbles(v[i]);
    }
    if constexpr (kFifthBit) {
        int h[4];
        load_i32x4<kWide>(block + qh_offset + l0, h);
        for (int i = 0; i < 4; ++i) {
            lo[i] |= byte_bit_to_4(h[i], 2 * pair);
            hi[i] |= byte_bit_to_4(h[i], 2 * pair + 1);
        }
    }
    PairDots<kCols> p;
    pair_dots<kCols>(lo, hi, a, e0, 64 * pair + l0, 64 * pair + 32 + l0, p);
    for (int c = 0; c < kCols; ++c) {
        const float scaled = static_cast<float>(sc_lo) * p.d_lo[c] * static_cast<float>(p.dot_lo[c]) +
                             static_cast<float>(sc_hi) * p.d_hi[c] * static_cast<float>(p.dot_hi[c]);
        const float mins = static_cast<float>(m_lo) * p.d_lo[c] * static_cast<float>(p.sum_lo[c]) +
                           static_cast<float>(m_hi) * p.d_hi[c] * static_cast<float>(p.sum_hi[c]);
        sum[c] += d * scaled - dmin * mins;
    }
}

template <>
struct Q8Dot<BlockQ4_K> {
    static constexpr int kUnits = 8;
    static constexpr bool kWideLoads = true;  // quants 16-byte aligned in 16-byte aligned rows
    template <int kCols, bool kWide = false>
    XB_HD static void dot(const uint8_t* block, int unit, const Q8Cols& a, int64_t e0, float (&sum)[kCols]) {
        k_affine_dot<kCols, false, kWide>(block, 0, 16, unit, a, e0, sum);
    }
};

template <>
struct Q8Dot<BlockQ5_K> {
    static constexpr int kUnits = 8;
    static constexpr bool kWideLoads = true;
    template <int kCols, bool kWide = false>
    XB_HD static void dot(const uint8_t* block, int unit, const Q8Cols& a, int64_t e0, float (&sum)[kCols]) {
        k_affine_dot<kCols, true, kWide>(block, 16, 48, unit, a, e0, sum);
    }
};

// q6_K: unit u = 4 * h + q holds bytes 16 q .. 16 q + 15 of half h's 64 bytes of ql: low nibbles
// are group g = q / 2 of the half, high nibbles group g + 2, each 16 values from 16 * (q % 2),
// their top two bits in qh, their scales one per 16 values.
template <>
struct Q8Dot<BlockQ6_K> {
    static constexpr int kUnits = 8;
    static constexpr bool kWideLoads = false;
    template <int kCols, bool kWide = false>
    XB_HD static void dot(const uint8_t* block, int unit, const Q8Cols& a, int64_t e0, float (&sum)[kCols]) {
        const int h = unit / 4;
        const int q = unit % 4;
        const int g_lo = q / 2;
        const int g_hi = g_lo + 2;
        const int l0 = 16 * (q % 2);
        const uint8_t* ql = block + 64 * h + 16 * q;
        const uint8_t* qh = block + 128 + 32 * h + l0;
        int lo[4], hi[4];
        for (int i = 0; i < 4; ++i) {
            const int vl = load_i32_a2(ql + 4 * i);
            const int vh = load_i32_a2(qh + 4 * i);
            lo[i] = low_nibbles(vl) | byte_bits2_to_4(vh, 2 * g_lo);
            hi[i] = high_nibbles(vl) | byte_bits2_to_4(vh, 2 * g_hi);
        }
        const auto* scales = reinterpret_cast<const int8_t*>(block + 192);
        const float sc_lo = static_cast<float>(scales[8 * h + 2 * g_lo + q % 2]);
        const float sc_hi = static_cast<float>(scales[8 * h + 2 * g_hi + q % 2]);
        const float d = f16_to_f32(load_u16(block + 208));
        PairDots<kCols> p;
        pair_dots<kCols>(lo, hi, a, e0, 128 * h + 32 * g_lo + l0, 128 * h + 32 * g_hi + l0, p);
        for (int c = 0; c < kCols; ++c) {
            // Values are stored as q + 32: take 32 times the activations' sum back out.
            const int net_lo = p.dot_lo[c] - 32 * p.sum_lo[c];
            const int net_hi = p.dot_hi[c] - 32 * p.sum_hi[c];
            sum[c] += d * (sc_lo * p.d_lo[c] * static_cast<float>(net_lo) + sc_hi * p.d_hi[c] * static_cast<float>(net_hi));
        }
    }
};

// q8_K as weights: unit u holds the 32 values of activation block u.
template <>
struct Q8Dot<BlockQ8_K> {
    static constexpr int kUnits = 8;
    static constexpr bool kWideLoads = false;
    template <int kCols, bool kWide = false>
    XB_HD static void dot(const uint8_t* block, int unit, const Q8Cols& a, int64_t e0, float (&sum)[kCols]) {
        const float d = load_f32_a4(block);
        int v[8];
        for (int i = 0; i < 8; ++i) v[i] = load_i32_a4(block + 4 + 32 * unit + 4 * i);
        int sum_q[kCols];
        Q8Scale s[kCols];
        legacy_dots<kCols>(
            [&](const int (&lo)[4], const int (&hi)[4]) { return byte_dot(v, lo, hi); },
            a, e0 + 32 * unit, sum_q, s);
        for (int c = 0; c < kCols; ++c) sum[c] += d * s[c].d * static_cast<float>(sum_q[c]);
    }
};

// The newer formats (q2_K, q3_K, IQ, TQ, MXFP4, NVFP4): unit u is values 32u .. 32u + 31, decoded by
// the format's decode_unit into signed bytes and two scales and offsets (core/quant_unit.hpp).
XB_HD int pack4_i8(const int8_t* q) {
    return static_cast<int>(static_cast<uint32_t>(static_cast<uint8_t>(q[0])) |
                            (static_cast<uint32_t>(static_cast<uint8_t>(q[1])) << 8) |
                            (static_cast<uint32_t>(static_cast<uint8_t>(q[2])) << 16) |
                            (static_cast<uint32_t>(static_cast<uint8_t>(q[3])) << 24));
}

template <UnitBlock Block>
struct Q8Dot<Block> {
    static constexpr int kUnits = Block::kElems / kUnitValues;
    static constexpr bool kWideLoads = false;
    template <int kCols, bool kWide = false>
    XB_HD static void dot(const uint8_t* block, int unit, const Q8Cols& a, int64_t e0, float (&sum)[kCols]) {
        QuantUnit u;
        decode_unit(*reinterpret_cast<const Block*>(block), unit, u);
        int w[8];
        for (int i = 0; i < 8; ++i) w[i] = pack4_i8(u.q + 4 * i);
        const int64_t first = e0 + kUnitValues * unit;
        for (int c = 0; c < kCols; ++c) {
            const int8_t* q = a.qs + c * a.qs_stride + first;
            int lo[4], hi[4];
            load_q8x16(q, lo);
            load_q8x16(q + 16, hi);
            int dot_lo = 0, dot_hi = 0, sum_lo = 0, sum_hi = 0;
            for (int i = 0; i < 4; ++i) {
                dot_lo = dot4_i8(w[i], lo[i], dot_lo);
                dot_hi = dot4_i8(w[4 + i], hi[i], dot_hi);
                sum_lo = dot4_i8(kOnes8, lo[i], sum_lo);
                sum_hi = dot4_i8(kOnes8, hi[i], sum_hi);
            }
            const float d = a.ds[c * a.ds_stride + first / kQ8Block].d;
            sum[c] += d * (u.scale[0] * static_cast<float>(dot_lo) + u.offset[0] * static_cast<float>(sum_lo) +
                           u.scale[1] * static_cast<float>(dot_hi) + u.offset[1] * static_cast<float>(sum_hi));
        }
    }
};

}  // namespace xb
