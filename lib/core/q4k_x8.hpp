// q4_K weights repacked 8 rows at a time, the layout of the CPU's repacked weight buffer type (as
// ggml's CPU repacks q4_K for its one-token products): one BlockQ4_Kx8 holds super-block b of 8
// consecutive rows. A one-token dot then reads 8 rows at once, one 64-bit broadcast of 8 activations
// serving all of them with no shuffle (see cpu_kernels' x8 dot), 1.6-2x the rate of a row at a time
// in L2 on Zen 4 (results/cpu/vs-llama-cpp-2026-12-07-zen4-night.md).
//
// The repacking is exact both ways: deinterleave gives back the rows' bytes.
#pragma once

#include <cstdint>
#include <cstring>

#include "core/quant_blocks.hpp"

namespace xb {

inline constexpr int kQ4KRowsPerGroup = 8;

struct BlockQ4_Kx8 {
    uint16_t d[kQ4KRowsPerGroup];     // each row's d (f16 bits, as in BlockQ4_K)
    uint16_t dmin[kQ4KRowsPerGroup];  // each row's dmin
    // The rows' 6-bit scales and mins in as many bytes as the rows have them (96), laid out so that
    // one 64-bit word gives a sub-block's values of all 8 rows: byte r of low[s] holds the low 4 bits
    // of row r's scale (low nibble) and min (high nibble) of sub-block s; byte r of high[j] the top 2
    // bits of row r's values 4j .. 4j + 3, counting the 8 scales then the 8 mins, 2 bits each from
    // bit 0 (q4_K_x8_scales, q4_K_x8_mins).
    uint8_t low[8][kQ4KRowsPerGroup];
    uint8_t high[4][kQ4KRowsPerGroup];
    // Chunk c (16 values of each row): byte 8r + j holds value 16c + j of row r in its low nibble
    // and value 16c + 8 + j in its high one (j < 8).
    uint8_t qs[kQKK / 16][8 * kQ4KRowsPerGroup];
};
static_assert(sizeof(BlockQ4_Kx8) == kQ4KRowsPerGroup * sizeof(BlockQ4_K), "the groups take the rows' bytes");

// Sub-block s's scales (or mins) of the 8 rows, byte r row r's, as one little-endian word.
inline uint64_t q4_K_x8_word(const uint8_t (&bytes)[kQ4KRowsPerGroup]) {
    uint64_t v = 0;  // one load (x86 is little-endian: byte r is bits 8r .. 8r + 7)
    std::memcpy(&v, bytes, sizeof v);
    return v;
}
inline uint64_t q4_K_x8_scales(const BlockQ4_Kx8& g, int s) {
    constexpr uint64_t kLow4 = 0x0F0F0F0F0F0F0F0Full, kLow2 = 0x0303030303030303ull;
    return (q4_K_x8_word(g.low[s]) & kLow4) | (((q4_K_x8_word(g.high[s / 4]) >> (2 * (s % 4))) & kLow2) << 4);
}
inline uint64_t q4_K_x8_mins(const BlockQ4_Kx8& g, int s) {
    constexpr uint64_t kLow4 = 0x0F0F0F0F0F0F0F0Full, kLow2 = 0x0303030303030303ull;
    return ((q4_K_x8_word(g.low[s]) >> 4) & kLow4) | (((q4_K_x8_word(g.high[2 + s / 4]) >> (2 * (s % 4))) & kLow2) << 4);
}

// rows[r] is super-block b of row r (r < 8).
void interleave_q4_K_x8(const BlockQ4_K* const (&rows)[kQ4KRowsPerGroup], BlockQ4_Kx8& out);
void deinterleave_q4_K_x8(const BlockQ4_Kx8& group, BlockQ4_K* const (&rows)[kQ4KRowsPerGroup]);

// A matrix of `n_rows` rows (a multiple of 8) of `n` values each (a multiple of 256): src holds the
// rows one after another (row r at src + r * n / 256), dst the groups in order, group g of rows
// 8g .. 8g + 7 at dst + g * n / 256, super-block b of the group at + b. Same bytes in both.
void interleave_q4_K_rows(const BlockQ4_K* src, int64_t n_rows, int64_t n, BlockQ4_Kx8* dst);
void deinterleave_q4_K_rows(const BlockQ4_Kx8* src, int64_t n_rows, int64_t n, BlockQ4_K* dst);

// The one-token dot of a group's 8 rows with q8_K activations, out[r] for r < 8, rows of n values:
// each sub-block's integer sum times its scale, the mins times the activations' 16-sums, both
// summed in int32 over the super-block, then d * a.d and dmin * a.d in float, as the vector
// kernels (cpu_kernels' quant_dot tables) do; the scalar tables use it as it is.
void dot_q4_K_x8_reference(int64_t n, const BlockQ4_Kx8* groups, const BlockQ8_K* activations, float* out);

// The 12 packed bytes of BlockQ4_K::scales holding these eight 6-bit scales and mins (the inverse
// of k_scale_min).
void k_pack_scales_mins(const uint8_t (&scales)[8], const uint8_t (&mins)[8], uint8_t (&packed)[12]);

}  // namespace xb
