// The tile path of quantized products (cpu_kernels/quant_tiles.hpp) on CPUs with AVX-512 VNNI:
// every weight type's panels times activation columns against the float64 dot of the dequantized
// weights and the dequantized 8-bit activations, with a partial last tile, a column count that is
// not a multiple of the kernel's block, two batches, and rows past the tile left untouched.
#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <vector>

#include "core/dtype.hpp"
#include "core/quant.hpp"
#include "core/quant_random.hpp"
#include "cpu_kernels/quant_dot.hpp"
#include "cpu_kernels/quant_tiles.hpp"
#include "quant_test_util.hpp"
#include "test_values.hpp"

namespace xb::cpu_kernels {
namespace {

// Aligned scratch for panels and columns (the kernels load them 64 bytes at a time).
struct Aligned {
    explicit Aligned(size_t bytes) : storage(bytes + 64) {}
    std::byte* get() {
        const auto at = reinterpret_cast<uintptr_t>(storage.data());
        return storage.data() + ((64 - at % 64) % 64);
    }
    std::vector<std::byte> storage;
};

// The activations each column's blocks stand for: d * q, as the products see them.
std::vector<double> dequantized_activations(DType weights, const std::vector<std::byte>& blocks, int64_t k) {
    std::vector<double> out(static_cast<size_t>(k));
    if (activation_format(weights) == ActFormat::Q8K) {
        std::vector<float> f(static_cast<size_t>(k));
        dequantize_row(DType::Q8_K, blocks.data(), f.data(), k);
        for (size_t i = 0; i < f.size(); ++i) out[i] = f[i];
        return out;
    }
    const auto* b = reinterpret_cast<const BlockQ8Sum*>(blocks.data());
    for (int64_t i = 0; i < k; ++i) out[static_cast<size_t>(i)] = static_cast<double>(b[i / kQK].d) * b[i / kQK].qs[i % kQK];
    return out;
}

TEST(QuantTiles, EveryTypeMatchesTheDequantizedProduct) {
    if (!tiles_supported()) GTEST_SKIP() << "this CPU has no AVX-512 VNNI";
    const QuantTiles& tiles = quant_tiles_avx512();
    const int64_t k = 3 * kQKK, rows = 2 * kTileRows + 5, columns = 11, batches = 2;
    const auto w_values = xbt::normal_values(static_cast<size_t>(k * rows), 5);
    const auto x = xbt::heavy_tailed_data(static_cast<size_t>(k * columns * batches), 6);
    int types = 0;
    for (int t = 0; t < kDTypeCount; ++t) {
        const auto type = static_cast<DType>(t);
        if (!is_quantized(type) || type == DType::Q8_K) continue;
        ASSERT_NE(tiles.decode[t], nullptr) << dtype_name(type);
        ++types;
        const size_t row_bytes = row_size(type, k);
        std::vector<std::byte> w(row_bytes * static_cast<size_t>(rows));
        if (can_quantize(type)) {
            for (int64_t r = 0; r < rows; ++r) quantize_row(type, w_values.data() + r * k, w.data() + row_bytes * r, k);
        } else {
            fill_random_blocks(type, w.data(), k * rows / blck_size(type), 8);
        }
        std::vector<float> wf(static_cast<size_t>(k * rows));
        dequantize_row(type, w.data(), wf.data(), k * rows);

        Aligned column_memory(TileColumns::bytes(k, columns, batches));
        const TileColumns cols = TileColumns::at(column_memory.get(), k, columns, batches);
        std::vector<std::vector<double>> act;  // per row of b
        for (int64_t c = 0; c < columns * batches; ++c) {
            std::vector<std::byte> blocks(activation_row_bytes(type, k));
            quant_dot().quantize_activations(type, x.data() + c * k, blocks.data(), k);
            cols.set_column(c, type, blocks.data());
            act.push_back(dequantized_activations(type, blocks, k));
        }

        Aligned panel_memory(TilePanel::bytes(k));
        TilePanel panel = TilePanel::at(panel_memory.get(), k);
        constexpr float kUntouched = 12345.0f;
        for (int64_t batch = 0; batch < batches; ++batch) {
            for (int64_t i0 = 0; i0 < rows; i0 += kTileRows) {
                const int nrows = static_cast<int>(std::min<int64_t>(kTileRows, rows - i0));
                tiles.decode[t](w.data() + row_bytes * i0, row_bytes, nrows, k, panel);
                std::vector<float> out(static_cast<size_t>(kTileRows * columns), kUntouched);
                tiles.product(panel, cols, cols.column(batch, 0), static_cast<int>(columns), nrows, out.data(), kTileRows);
                for (int64_t j = 0; j < columns; ++j) {
                    const std::vector<double>& a = act[static_cast<size_t>(batch * columns + j)];
                    for (int r = 0; r < kTileRows; ++r) {
                        const float got = out[static_cast<size_t>(j * kTileRows + r)];
                        if (r >= nrows) {
                            EXPECT_EQ(got, kUntouched) << dtype_name(type) << ": row " << i0 + r << " is past the matrix";
                            continue;
                        }
                        double want = 0, norm = 0;
                        for (int64_t e = 0; e < k; ++e) {
                            const double term = wf[static_cast<size_t>((i0 + r) * k + e)] * a[static_cast<size_t>(e)];
                            want += term;
                            norm += std::fabs(term);
                        }
                        ASSERT_NEAR(got, want, 2e-6 * norm + 1e-30)
                            << dtype_name(type) << " row " << i0 + r << " column " << j << " of batch " << batch;
                    }
                }
            }
        }
    }
    EXPECT_GE(types, 23);
}

// The panel says which variant of the kernel it needs: offsets only where the format has minima,
// pairs of groups (one scale per 32 values) only where every row's scales go by 32.
TEST(QuantTiles, ThePanelNamesItsKernelVariant) {
    if (!tiles_supported()) GTEST_SKIP() << "this CPU has no AVX-512 VNNI";
    const QuantTiles& tiles = quant_tiles_avx512();
    const int64_t k = kQKK;
    std::vector<std::byte> w(row_size(DType::Q8_0, k) * kTileRows);
    fill_random_blocks(DType::Q8_0, w.data(), k * kTileRows / kQK, 9);
    Aligned panel_memory(TilePanel::bytes(k));
    TilePanel panel = TilePanel::at(panel_memory.get(), k);
    tiles.decode[static_cast<int>(DType::Q8_0)](w.data(), row_size(DType::Q8_0, k), kTileRows, k, panel);
    EXPECT_FALSE(panel.has_offsets);
    EXPECT_TRUE(panel.pairs);
    std::vector<std::byte> w6(row_size(DType::Q6_K, k) * kTileRows);
    fill_random_blocks(DType::Q6_K, w6.data(), kTileRows, 10);
    tiles.decode[static_cast<int>(DType::Q6_K)](w6.data(), row_size(DType::Q6_K, k), kTileRows, k, panel);
    EXPECT_FALSE(panel.pairs);  // q6_K scales every 16 values
    std::vector<std::byte> w4(row_size(DType::Q4_K, k) * 3);
    fill_random_blocks(DType::Q4_K, w4.data(), 3, 11);
    tiles.decode[static_cast<int>(DType::Q4_K)](w4.data(), row_size(DType::Q4_K, k), 3, k, panel);
    EXPECT_TRUE(panel.has_offsets);  // its minima
    EXPECT_TRUE(panel.pairs);
}

}  // namespace
}  // namespace xb::cpu_kernels
