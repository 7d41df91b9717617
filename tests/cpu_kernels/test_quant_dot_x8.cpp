// The one-token dot of 8 repacked q4_K rows (QuantDot::dot_q4_K_x8, every instruction set this CPU
// runs) against the float64 dot of the dequantized operands and against each row's plain dot, on
// random valid blocks and random activations, with one and several super-blocks a row.
#include <gtest/gtest.h>

#include <cmath>
#include <cstdint>
#include <cstring>
#include <random>
#include <vector>

#include "core/isa.hpp"
#include "core/q4k_x8.hpp"
#include "core/quant.hpp"
#include "core/quant_random.hpp"
#include "cpu_kernels/quant_dot.hpp"
#include "cpu_kernels/quant_tiles.hpp"

namespace xb::cpu_kernels {
namespace {

class QuantDotX8 : public ::testing::TestWithParam<int64_t> {};

TEST_P(QuantDotX8, MatchesExactAndPlainDots) {
    const int64_t n = GetParam();
    constexpr int64_t kRows = 16;
    const int64_t blocks = n / kQKK;
    std::vector<BlockQ4_K> plain(static_cast<size_t>(kRows * blocks));
    fill_random_blocks(DType::Q4_K, plain.data(), static_cast<int64_t>(plain.size()), 5 + static_cast<uint64_t>(n));
    std::vector<BlockQ4_Kx8> groups(static_cast<size_t>(kRows / 8 * blocks));
    interleave_q4_K_rows(plain.data(), kRows, n, groups.data());

    std::mt19937 rng(static_cast<uint32_t>(n));
    std::uniform_real_distribution<float> uniform(-2.0f, 2.0f);
    std::vector<float> x(static_cast<size_t>(n));
    for (float& v : x) v = uniform(rng);
    std::vector<float> w(static_cast<size_t>(n));
    std::vector<float> a(static_cast<size_t>(n));

    for (Isa isa : supported_isas()) {
        const QuantDot& table = quant_dot(isa);
        ASSERT_NE(table.dot_q4_K_x8, nullptr) << isa_name(isa);
        std::vector<BlockQ8_K> act(static_cast<size_t>(blocks));
        table.quantize_q8k(x.data(), act.data(), n);
        dequantize_row(DType::Q8_K, act.data(), a.data(), n);
        for (int64_t g = 0; g < kRows / 8; ++g) {
            float got[8];
            table.dot_q4_K_x8(n, groups.data() + g * blocks, act.data(), got);
            for (int r = 0; r < 8; ++r) {
                const int64_t row = g * 8 + r;
                dequantize_row(DType::Q4_K, plain.data() + row * blocks, w.data(), n);
                double exact = 0;
                double magnitude = 0;
                for (int64_t i = 0; i < n; ++i) {
                    exact += static_cast<double>(w[static_cast<size_t>(i)]) * a[static_cast<size_t>(i)];
                    magnitude += std::fabs(static_cast<double>(w[static_cast<size_t>(i)]) * a[static_cast<size_t>(i)]);
                }
                float plain_dot = 0;
                table.dot[static_cast<int>(DType::Q4_K)](n, plain.data() + row * blocks, act.data(), 0, 1, &plain_dot);
                EXPECT_NEAR(got[r], exact, 2e-6 * magnitude) << isa_name(isa) << " row " << row;
                EXPECT_NEAR(got[r], plain_dot, 2e-6 * magnitude) << isa_name(isa) << " row " << row;
            }
        }
    }
}

INSTANTIATE_TEST_SUITE_P(Lengths, QuantDotX8, ::testing::Values(kQKK, 3 * kQKK, 16 * kQKK));

// A tile decoded straight from 8-row groups gives the very panel the rows' decoder gives: every
// byte of q, every scale and offset bit for bit, the same flags; with 16 rows and with 8.
TEST(QuantTilesX8, PanelEqualsTheRowsPanel) {
    if (!tiles_avx512_supported()) GTEST_SKIP() << "no AVX-512 VNNI tiles on this CPU";
    const QuantTiles& tiles = quant_tiles_avx512();
    ASSERT_NE(tiles.decode_q4_K_x8, nullptr);
    constexpr int64_t kN = 3 * kQKK;
    constexpr int64_t kBlocks = kN / kQKK;
    std::vector<BlockQ4_K> plain(static_cast<size_t>(kTileRows * kBlocks));
    fill_random_blocks(DType::Q4_K, plain.data(), static_cast<int64_t>(plain.size()), 77);
    plain[3].dmin = 0;  // a zero dmin: its offsets are -0, as the rows' decoder makes them
    std::vector<BlockQ4_Kx8> groups(static_cast<size_t>(2 * kBlocks));
    interleave_q4_K_rows(plain.data(), kTileRows, kN, groups.data());
    for (int rows : {kTileRows, kTileRows / 2}) {
        std::vector<std::byte> memory_rows(TilePanel::bytes(kN) + 64), memory_groups(TilePanel::bytes(kN) + 64);
        const auto aligned = [](std::vector<std::byte>& m) {
            return reinterpret_cast<std::byte*>((reinterpret_cast<uintptr_t>(m.data()) + 63) / 64 * 64);
        };
        TilePanel from_rows = TilePanel::at(aligned(memory_rows), kN);
        TilePanel from_groups = TilePanel::at(aligned(memory_groups), kN);
        tiles.decode[static_cast<int>(DType::Q4_K)](reinterpret_cast<const std::byte*>(plain.data()), kBlocks * sizeof(BlockQ4_K),
                                                   rows, kN, from_rows);
        tiles.decode_q4_K_x8(groups.data(), rows > 8 ? groups.data() + kBlocks : nullptr, kN, from_groups);
        EXPECT_EQ(std::memcmp(from_rows.q, from_groups.q, static_cast<size_t>(kN * kTileRows)), 0) << rows << " rows";
        const size_t floats = static_cast<size_t>(kN / kTileGroup * kTileRows);
        EXPECT_EQ(std::memcmp(from_rows.scale, from_groups.scale, floats * sizeof(float)), 0) << rows << " rows";
        EXPECT_EQ(std::memcmp(from_rows.offset, from_groups.offset, floats * sizeof(float)), 0) << rows << " rows";
        EXPECT_EQ(from_rows.encoding, from_groups.encoding);
        EXPECT_EQ(from_rows.pairs, from_groups.pairs);
        EXPECT_EQ(from_rows.has_offsets, from_groups.has_offsets);
        EXPECT_EQ(from_rows.integer_scales, from_groups.integer_scales);
        EXPECT_EQ(from_rows.largest, from_groups.largest);
    }
}

}  // namespace
}  // namespace xb::cpu_kernels
