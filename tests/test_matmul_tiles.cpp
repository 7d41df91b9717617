// The mul_mat tile kernels of every instruction set this CPU runs, against a float64 dot product,
// for every column count of each table; and the choice of instruction set by name.
#include <gtest/gtest.h>

#include <cmath>
#include <random>
#include <vector>

#include "host/matmul_tiles.hpp"

namespace xb::host {
namespace {

TEST(MatmulTiles, EveryTableMatchesAFloat64DotProduct) {
    std::mt19937 rng(11);
    std::uniform_real_distribution<float> dist(-1.0f, 1.0f);
    for (Isa isa : supported_isas()) {
        const MatmulTiles& table = matmul_tiles(isa);
        SCOPED_TRACE(isa_name(isa));
        EXPECT_EQ(table.isa, isa);
        ASSERT_GE(table.cols, 1);
        ASSERT_LE(table.cols, kMaxTileCols);
        ASSERT_LE(table.width, kMaxVectorWidth);
        const int64_t len = 37 * table.width;  // an odd number of vectors
        std::vector<std::vector<float>> a(kTileRows, std::vector<float>(static_cast<size_t>(len)));
        std::vector<std::vector<float>> b(static_cast<size_t>(table.cols), std::vector<float>(static_cast<size_t>(len)));
        for (auto* rows : {&a, &b}) {
            for (auto& row : *rows) {
                for (float& x : row) x = dist(rng);
            }
        }
        const float* a_rows[kTileRows];
        for (int i = 0; i < kTileRows; ++i) a_rows[i] = a[static_cast<size_t>(i)].data();
        const float* b_cols[kMaxTileCols];
        for (int j = 0; j < table.cols; ++j) b_cols[j] = b[static_cast<size_t>(j)].data();
        for (int cols = 1; cols <= table.cols; ++cols) {
            MatmulTile out{};
            table.tile[cols - 1](a_rows, b_cols, len, out);
            for (int j = 0; j < cols; ++j) {
                for (int i = 0; i < kTileRows; ++i) {
                    double want = 0.0;
                    for (int64_t k = 0; k < len; ++k) {
                        want += static_cast<double>(a[static_cast<size_t>(i)][static_cast<size_t>(k)]) * b[static_cast<size_t>(j)][static_cast<size_t>(k)];
                    }
                    // f32 accumulation over `len` terms of magnitude < 1.
                    EXPECT_NEAR(out[j][i], want, 1e-5 * static_cast<double>(len)) << "tile " << cols << " column " << j << " row " << i;
                }
            }
        }
    }
}

TEST(MatmulTiles, InstructionSetsByName) {
    EXPECT_EQ(isa_from_name("scalar"), Isa::Scalar);
    EXPECT_EQ(isa_from_name("bogus"), std::nullopt);
    // A set this CPU lacks gives the best one below it.
    const std::optional<Isa> widest = isa_from_name("avx512");
    ASSERT_TRUE(widest.has_value());
    EXPECT_EQ(*widest, best_isa());
    EXPECT_TRUE(isa_supported(active_isa()));
}

}  // namespace
}  // namespace xb::host
