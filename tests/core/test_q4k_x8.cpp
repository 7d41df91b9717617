// The 8-row repacking of q4_K (core/q4k_x8.hpp): exact both ways, every value, scale and min where
// the layout says, for random valid blocks (every 6-bit scale and min value occurs).
#include <gtest/gtest.h>

#include <cstring>
#include <vector>

#include "core/dtype.hpp"
#include "core/q4k_x8.hpp"
#include "core/quant.hpp"
#include "core/quant_blocks.hpp"
#include "core/quant_random.hpp"

namespace xb {
namespace {

std::vector<BlockQ4_K> random_rows(int64_t rows, int64_t n, uint64_t seed) {
    std::vector<BlockQ4_K> blocks(static_cast<size_t>(rows * n / kQKK));
    fill_random_blocks(DType::Q4_K, blocks.data(), static_cast<int64_t>(blocks.size()), seed);
    return blocks;
}

// The 8-row groups of `rows` rows of n values.
std::vector<BlockQ4_Kx8> interleaved(const std::vector<BlockQ4_K>& plain, int64_t rows, int64_t n) {
    std::vector<BlockQ4_Kx8> groups(static_cast<size_t>(rows / 8 * n / kQKK));
    interleave_q4_K_rows(plain.data(), rows, n, groups.data());
    return groups;
}

TEST(Q4KRepack, PackedScalesRoundTrip) {
    // Every 6-bit value in every position: k_pack_scales_mins is k_scale_min's inverse.
    for (int v = 0; v < 64; ++v) {
        uint8_t scales[8];
        uint8_t mins[8];
        for (int s = 0; s < 8; ++s) {
            scales[s] = static_cast<uint8_t>((v + 7 * s) % 64);
            mins[s] = static_cast<uint8_t>((v * 5 + 3 * s + 1) % 64);
        }
        uint8_t packed[12];
        k_pack_scales_mins(scales, mins, packed);
        for (int s = 0; s < 8; ++s) {
            int scale = -1;
            int min = -1;
            k_scale_min(packed, s, scale, min);
            EXPECT_EQ(scale, scales[s]) << "v " << v << " sub-block " << s;
            EXPECT_EQ(min, mins[s]) << "v " << v << " sub-block " << s;
        }
    }
}

TEST(Q4KRepack, RowsRoundTripExactly) {
    constexpr int64_t kRows = 24;
    constexpr int64_t kN = 3 * kQKK;
    const std::vector<BlockQ4_K> plain = random_rows(kRows, kN, 11);
    const std::vector<BlockQ4_Kx8> groups = interleaved(plain, kRows, kN);
    std::vector<BlockQ4_K> back(plain.size());
    std::memset(back.data(), 0xA5, back.size() * sizeof(BlockQ4_K));
    deinterleave_q4_K_rows(groups.data(), kRows, kN, back.data());
    EXPECT_EQ(std::memcmp(plain.data(), back.data(), plain.size() * sizeof(BlockQ4_K)), 0);
}

TEST(Q4KRepack, EveryValueWhereTheLayoutSays) {
    // Each value of each row, rebuilt from the group as d * scale * q - dmin * min, equals the plain
    // row's dequantized value bit for bit.
    constexpr int64_t kRows = 16;
    constexpr int64_t kN = 2 * kQKK;
    const std::vector<BlockQ4_K> plain = random_rows(kRows, kN, 29);
    const std::vector<BlockQ4_Kx8> groups = interleaved(plain, kRows, kN);
    std::vector<float> expected(static_cast<size_t>(kN));
    for (int64_t row = 0; row < kRows; ++row) {
        dequantize_row(DType::Q4_K, plain.data() + row * kN / kQKK, expected.data(), kN);
        const int r = static_cast<int>(row % 8);
        for (int64_t e = 0; e < kN; ++e) {
            const BlockQ4_Kx8& g = groups[static_cast<size_t>(row / 8 * kN / kQKK + e / kQKK)];
            const int v = static_cast<int>(e % kQKK);
            const int s = v / 32;
            const uint8_t byte = g.qs[v / 16][8 * r + v % 8];
            const int q = v % 16 < 8 ? byte & 0x0F : byte >> 4;
            const float d = f16_to_f32(g.d[r]) * static_cast<float>((q4_K_x8_scales(g, s) >> (8 * r)) & 0xFF);
            const float m = f16_to_f32(g.dmin[r]) * static_cast<float>((q4_K_x8_mins(g, s) >> (8 * r)) & 0xFF);
            EXPECT_EQ(mul_then_sub(d, static_cast<float>(q), m), expected[static_cast<size_t>(e)]) << "row " << row << " value " << e;
        }
    }
}

}  // namespace
}  // namespace xb
