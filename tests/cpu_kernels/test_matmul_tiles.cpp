// The mul_mat tile kernels of every instruction set this CPU runs, against a float64 dot product,
// for every column count of each table; the outer-product tile and the panel packing of each
// table; tile_dots over counts that fill no whole tile; the padded row loader; and the choice of
// instruction set by name.
#include <gtest/gtest.h>

#include <cmath>
#include <algorithm>
#include <cstdint>
#include <random>
#include <utility>
#include <vector>

#include "cpu_kernels/matmul_tiles.hpp"

namespace xb::cpu_kernels {
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

// The outer-product tile of each table from packed panels, against float64 sums: written into a
// dst wider than the tile (ldc > mr) without touching the gap, then accumulated onto.
TEST(MatmulTiles, EveryOuterTileMatchesFloat64Sums) {
    std::mt19937 rng(13);
    std::uniform_real_distribution<float> dist(-1.0f, 1.0f);
    for (Isa isa : supported_isas()) {
        const GemmKernel& gemm = matmul_tiles(isa).gemm;
        SCOPED_TRACE(isa_name(isa));
        ASSERT_EQ(gemm.mr % matmul_tiles(isa).width, 0);
        ASSERT_LE(gemm.mr, kMaxPanelRows);
        ASSERT_LE(gemm.nr, kMaxPanelRows);
        const int64_t kc = 77;
        std::vector<float> a(static_cast<size_t>(kc * gemm.mr)), b(static_cast<size_t>(kc * gemm.nr));
        for (float& x : a) x = dist(rng);
        for (float& x : b) x = dist(rng);
        const int64_t ldc = gemm.mr + 5;
        std::vector<float> c(static_cast<size_t>(ldc * gemm.nr), NAN);
        std::vector<float> before(c.size());
        for (int pass = 0; pass < 2; ++pass) {
            for (size_t e = 0; e < c.size(); ++e) before[e] = pass == 0 ? 0.0f : c[e];
            gemm.tile(kc, a.data(), b.data(), c.data(), ldc, pass == 1);
            for (int64_t j = 0; j < gemm.nr; ++j) {
                for (int64_t i = 0; i < ldc; ++i) {
                    const size_t at = static_cast<size_t>(j * ldc + i);
                    if (i >= gemm.mr) {
                        EXPECT_TRUE(std::isnan(c[at])) << "wrote into the gap after column " << j;
                        continue;
                    }
                    double want = before[at];
                    for (int64_t k = 0; k < kc; ++k) {
                        want += static_cast<double>(a[static_cast<size_t>(k * gemm.mr + i)]) * b[static_cast<size_t>(k * gemm.nr + j)];
                    }
                    EXPECT_NEAR(c[at], want, 1e-5 * static_cast<double>(kc)) << "pass " << pass << " row " << i << " column " << j;
                }
            }
        }
    }
}

// Each table's packing is a transpose, for every row count it may be given and lengths with and
// without a partial block of 8, and writes nothing past the panel.
TEST(MatmulTiles, EveryPackIsATransposeThatStaysInItsPanel) {
    std::mt19937 rng(14);
    std::uniform_real_distribution<float> dist(-1.0f, 1.0f);
    for (Isa isa : supported_isas()) {
        const GemmKernel& gemm = matmul_tiles(isa).gemm;
        SCOPED_TRACE(isa_name(isa));
        for (int rows = 1; rows <= kMaxPanelRows; ++rows) {
            for (int64_t len : {1, 8, 19, 64}) {
                std::vector<std::vector<float>> src(static_cast<size_t>(rows), std::vector<float>(static_cast<size_t>(len)));
                std::vector<const float*> ptrs;
                for (auto& row : src) {
                    for (float& x : row) x = dist(rng);
                    ptrs.push_back(row.data());
                }
                std::vector<float> out(static_cast<size_t>(len * rows + 24), NAN);
                gemm.pack(ptrs.data(), rows, len, out.data());
                for (int64_t k = 0; k < len; ++k) {
                    for (int i = 0; i < rows; ++i) {
                        ASSERT_EQ(out[static_cast<size_t>(k * rows + i)], src[static_cast<size_t>(i)][static_cast<size_t>(k)])
                            << rows << " rows, len " << len << ", k " << k << ", row " << i;
                    }
                }
                for (size_t e = static_cast<size_t>(len * rows); e < out.size(); ++e) {
                    ASSERT_TRUE(std::isnan(out[e])) << rows << " rows, len " << len << ": wrote past the panel";
                }
            }
        }
    }
}

// tile_dots (the active table) over row and column counts that leave partial tiles on both sides,
// writing with a row stride wider than the rows.
TEST(MatmulTiles, TileDotsCoverPartialTiles) {
    std::mt19937 rng(12);
    std::uniform_real_distribution<float> dist(-1.0f, 1.0f);
    const int64_t len = 5 * matmul_tiles().width;
    for (const auto& [na, nb] : {std::pair<int64_t, int64_t>{1, 1}, {7, 5}, {13, 17}, {4, 6}}) {
        std::vector<std::vector<float>> a(static_cast<size_t>(na), std::vector<float>(static_cast<size_t>(len)));
        std::vector<std::vector<float>> b(static_cast<size_t>(nb), std::vector<float>(static_cast<size_t>(len)));
        std::vector<const float*> a_rows, b_rows;
        for (auto& row : a) {
            for (float& x : row) x = dist(rng);
            a_rows.push_back(row.data());
        }
        for (auto& row : b) {
            for (float& x : row) x = dist(rng);
            b_rows.push_back(row.data());
        }
        const int64_t stride = na + 3;
        std::vector<float> out(static_cast<size_t>(nb * stride), NAN);
        tile_dots(a_rows.data(), na, b_rows.data(), nb, len, out.data(), stride);
        for (int64_t j = 0; j < nb; ++j) {
            for (int64_t i = 0; i < stride; ++i) {
                const float got = out[static_cast<size_t>(j * stride + i)];
                if (i >= na) {
                    EXPECT_TRUE(std::isnan(got)) << "wrote past row " << j << "'s " << na << " entries";
                    continue;
                }
                double want = 0.0;
                for (int64_t k = 0; k < len; ++k) {
                    want += static_cast<double>(a[static_cast<size_t>(i)][static_cast<size_t>(k)]) * b[static_cast<size_t>(j)][static_cast<size_t>(k)];
                }
                EXPECT_NEAR(got, want, 1e-5 * static_cast<double>(len)) << na << " x " << nb << " at " << i << ", " << j;
            }
        }
    }
}

TEST(MatmulTiles, LoadRowF32ConvertsAndPadsWithZeros) {
    const std::vector<uint16_t> halves = {0x3c00, 0xc000, 0x3800};  // f16 1, -2, 0.5
    float row[8];
    std::fill(row, row + 8, NAN);
    load_row_f32(DType::F16, reinterpret_cast<const std::byte*>(halves.data()), sizeof(uint16_t), 3, 8, row);
    EXPECT_EQ(std::vector<float>(row, row + 8), (std::vector<float>{1.0f, -2.0f, 0.5f, 0, 0, 0, 0, 0}));
    // Strided f32 (every other element) goes element by element.
    const std::vector<float> wide = {1.5f, 9.0f, -3.0f, 9.0f};
    load_row_f32(DType::F32, reinterpret_cast<const std::byte*>(wide.data()), 2 * sizeof(float), 2, 4, row);
    EXPECT_EQ(std::vector<float>(row, row + 4), (std::vector<float>{1.5f, -3.0f, 0, 0}));
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
}  // namespace xb::cpu_kernels
