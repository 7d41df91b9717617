// The mul_mat tile kernels of every instruction set this CPU runs, against a float64 dot product,
// for every column count of each table; the outer-product tile and the panel packing of each
// table; the AVX512-BF16 tile and its packing; the padded row loader; and the choice of
// instruction set by name.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <random>
#include <string>
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
            gemm.tile(kc, a.data(), b.data(), c.data(), ldc, pass == 1, TilePrefetch{});
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

// The bits of a float (NaN payloads compared too).
uint32_t float_bits(float v) {
    uint32_t bits;
    std::memcpy(&bits, &v, sizeof bits);
    return bits;
}

// Each table's packers (from f32, f16 and bf16 rows) transpose, widening 16-bit elements exactly
// (subnormals, infinities, NaN and -0 among them), for every row count they may be given and
// lengths with and without a partial block of 8, and write nothing past the panel.
TEST(MatmulTiles, EveryPackIsATransposeThatStaysInItsPanel) {
    std::mt19937 rng(14);
    std::uniform_real_distribution<float> dist(-1.0f, 1.0f);
    const uint16_t f16_specials[] = {0x0001, 0x03ff, 0x7c00, 0xfc00, 0x7e01, 0x8000, 0x7bff};
    const uint16_t bf16_specials[] = {0x0001, 0x007f, 0x7f80, 0xff80, 0x7fc1, 0x8000, 0x7f7f};
    for (Isa isa : supported_isas()) {
        const GemmKernel& gemm = matmul_tiles(isa).gemm;
        for (DType type : {DType::F32, DType::F16, DType::BF16}) {
            SCOPED_TRACE(std::string(isa_name(isa)) + " " + dtype_name(type));
            for (int rows = 1; rows <= kMaxPanelRows; ++rows) {
                for (int64_t len : {1, 8, 19, 64}) {
                    // Each row as f32 values (what the panel must hold) and in its own type.
                    std::vector<std::vector<float>> want(static_cast<size_t>(rows), std::vector<float>(static_cast<size_t>(len)));
                    std::vector<std::vector<uint16_t>> half(static_cast<size_t>(rows), std::vector<uint16_t>(static_cast<size_t>(len)));
                    for (size_t i = 0; i < want.size(); ++i) {
                        for (size_t k = 0; k < want[i].size(); ++k) {
                            const size_t special = (i * 7 + k) % 23;
                            if (type == DType::F16) {
                                half[i][k] = special < 7 ? f16_specials[special] : f32_to_f16(dist(rng));
                                want[i][k] = f16_to_f32(half[i][k]);
                            } else if (type == DType::BF16) {
                                half[i][k] = special < 7 ? bf16_specials[special] : f32_to_bf16(dist(rng));
                                want[i][k] = bf16_to_f32(half[i][k]);
                            } else {
                                want[i][k] = dist(rng);
                            }
                        }
                    }
                    std::vector<const float*> f32_rows;
                    std::vector<const uint16_t*> half_rows;
                    for (size_t i = 0; i < want.size(); ++i) {
                        f32_rows.push_back(want[i].data());
                        half_rows.push_back(half[i].data());
                    }
                    std::vector<float> out(static_cast<size_t>(len * rows + 24), NAN);
                    if (type == DType::F32) gemm.pack.f32(f32_rows.data(), rows, len, out.data());
                    if (type == DType::F16) gemm.pack.f16(half_rows.data(), rows, len, out.data());
                    if (type == DType::BF16) gemm.pack.bf16(half_rows.data(), rows, len, out.data());
                    for (int64_t k = 0; k < len; ++k) {
                        for (int i = 0; i < rows; ++i) {
                            ASSERT_EQ(float_bits(out[static_cast<size_t>(k * rows + i)]),
                                      float_bits(want[static_cast<size_t>(i)][static_cast<size_t>(k)]))
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
}

// pack_typed_rows packs the types it has a packer for and leaves the others (and rows off their
// element's boundary) to the caller, writing nothing.
TEST(MatmulTiles, TypedRowsArePackedOnlyWhereAPackerReadsThem) {
    const GemmKernel& gemm = matmul_tiles().gemm;
    alignas(16) std::byte bytes[64] = {};
    const std::byte* rows[2] = {bytes, bytes + 32};
    float out[16];
    std::fill(std::begin(out), std::end(out), NAN);
    EXPECT_FALSE(pack_typed_rows(gemm.pack, DType::Q8_0, rows, 2, 8, out));
    const std::byte* unaligned[2] = {bytes + 2, bytes + 34};
    EXPECT_FALSE(pack_typed_rows(gemm.pack, DType::F32, unaligned, 2, 4, out));
    const std::byte* odd[2] = {bytes + 1, bytes + 33};
    EXPECT_FALSE(pack_typed_rows(gemm.pack, DType::BF16, odd, 2, 8, out));
    for (float v : out) EXPECT_TRUE(std::isnan(v));
    EXPECT_TRUE(pack_typed_rows(gemm.pack, DType::F16, unaligned, 2, 8, out));
    for (float v : out) EXPECT_EQ(v, 0.0f);
}

// bf16 values of random floats in [-1, 1], and the float each stands for.
std::vector<uint16_t> random_bf16(size_t n, std::mt19937& rng) {
    std::uniform_real_distribution<float> dist(-1.0f, 1.0f);
    std::vector<uint16_t> out(n);
    for (uint16_t& x : out) x = f32_to_bf16(dist(rng));
    return out;
}

// The AVX512-BF16 tile (where this CPU has it): pairs of bf16 products summed in f32, against the
// same bf16 values multiplied in float64; the packing of odd and even lengths into pair cells.
TEST(MatmulTiles, Bf16TileMatchesFloat64OfItsBf16Values) {
    const Bf16GemmKernel* kernel = bf16_gemm_kernel();
    if (kernel == nullptr) GTEST_SKIP() << "no AVX512-BF16 on this CPU (or a lower XB_CPU_ISA)";
    ASSERT_LE(kernel->mr, kMaxPanelRows);
    ASSERT_LE(kernel->nr, kMaxPanelRows);
    std::mt19937 rng(15);
    for (int64_t len : {1, 2, 15, 16, 77, 128}) {
        SCOPED_TRACE("len " + std::to_string(len));
        const auto rows_of = [&](int count) {
            std::vector<std::vector<uint16_t>> rows;
            for (int i = 0; i < count; ++i) rows.push_back(random_bf16(static_cast<size_t>(len), rng));
            return rows;
        };
        const auto a = rows_of(kernel->mr), b = rows_of(kernel->nr);
        const auto packed = [&](const std::vector<std::vector<uint16_t>>& rows) {
            std::vector<const uint16_t*> ptrs;
            for (const auto& row : rows) ptrs.push_back(row.data());
            const size_t cells = static_cast<size_t>((len + 1) / 2) * rows.size();
            std::vector<uint32_t> out(cells + 7, 0xdeadbeefu);
            kernel->pack(ptrs.data(), static_cast<int>(rows.size()), len, out.data());
            for (size_t e = cells; e < out.size(); ++e) EXPECT_EQ(out[e], 0xdeadbeefu) << "wrote past the panel";
            out.resize(cells);
            return out;
        };
        const std::vector<uint32_t> pa = packed(a), pb = packed(b);
        // The layout: cell (p, i) holds elements 2p (low half) and 2p + 1 (high half, 0 past len).
        for (int64_t p = 0; p < (len + 1) / 2; ++p) {
            const uint32_t c = pa[static_cast<size_t>(p * kernel->mr + 1)];
            EXPECT_EQ(c & 0xffffu, a[1][static_cast<size_t>(2 * p)]) << p;
            EXPECT_EQ(c >> 16, 2 * p + 1 < len ? a[1][static_cast<size_t>(2 * p + 1)] : 0u) << p;
        }
        const int64_t ldc = kernel->mr + 3;
        std::vector<float> c(static_cast<size_t>(ldc * kernel->nr), 0.5f);
        kernel->tile((len + 1) / 2, pa.data(), pb.data(), c.data(), ldc, true, TilePrefetch{});
        for (int j = 0; j < kernel->nr; ++j) {
            for (int64_t i = 0; i < ldc; ++i) {
                const float got = c[static_cast<size_t>(j * ldc + i)];
                if (i >= kernel->mr) {
                    EXPECT_EQ(got, 0.5f) << "wrote into the gap after column " << j;
                    continue;
                }
                double want = 0.5;
                for (int64_t k = 0; k < len; ++k) {
                    want += static_cast<double>(bf16_to_f32(a[static_cast<size_t>(i)][static_cast<size_t>(k)])) *
                            bf16_to_f32(b[static_cast<size_t>(j)][static_cast<size_t>(k)]);
                }
                // Products of bf16 are exact in f32: only the sums round.
                EXPECT_NEAR(got, want, 4e-7 * static_cast<double>(len + 2)) << "row " << i << " column " << j;
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
