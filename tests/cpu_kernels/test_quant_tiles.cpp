// The tile path of quantized products (cpu_kernels/quant_tiles.hpp), each table this CPU runs
// (AVX-512 VNNI, AVX2): every weight type's panels times activation columns against the float64 dot
// of the dequantized weights and the dequantized 8-bit activations, with a partial last tile, a
// column count that is not a multiple of the kernel's block, two batches, and rows past the tile
// left untouched; the panel's encoding and kernel variant; and, for AVX2's 16-bit sums, panels at
// the largest values each variant takes against the largest activations (no saturation).
#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <string>
#include <vector>

#include "core/dtype.hpp"
#include "core/isa.hpp"
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

struct TileTable {
    const char* name;
    bool (*supported)();
    const QuantTiles& (*table)();
};

const TileTable kTables[] = {
    {"avx512_vnni", &tiles_avx512_supported, &quant_tiles_avx512},
    {"avx2", [] { return isa_supported(Isa::Avx2); }, &quant_tiles_avx2},
};

class QuantTilesTest : public ::testing::TestWithParam<TileTable> {
protected:
    void SetUp() override {
        if (!GetParam().supported()) GTEST_SKIP() << "this CPU does not run the " << GetParam().name << " table";
    }
    const QuantTiles& tiles() const { return GetParam().table(); }
};

INSTANTIATE_TEST_SUITE_P(Tables, QuantTilesTest, ::testing::ValuesIn(kTables),
                         [](const ::testing::TestParamInfo<TileTable>& info) { return std::string(info.param.name); });

TEST_P(QuantTilesTest, EveryTypeMatchesTheDequantizedProduct) {
    const QuantTiles& tiles = this->tiles();
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
        const TileColumns cols = TileColumns::at(column_memory.get(), k, columns, batches, type);
        std::vector<std::vector<double>> act;  // per row of b
        for (int64_t c = 0; c < columns * batches; ++c) {
            std::vector<std::byte> blocks(activation_row_bytes(type, k));
            quant_dot().quantize_activations(type, x.data() + c * k, blocks.data(), k);
            cols.set_column(c, blocks.data());
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

// The panel says which variant of the kernel it needs: offsets only where the format has minima
// (or, for AVX2, where narrowing to unsigned bytes moved a bias into them), pairs of groups (one
// scale per 32 values) only where every row's scales go by 32, its bytes' encoding, and (AVX2)
// integer scales for the k-quants that have them.
TEST_P(QuantTilesTest, ThePanelNamesItsKernelVariant) {
    const QuantTiles& tiles = this->tiles();
    const bool avx2 = std::string(GetParam().name) == "avx2";
    using Encoding = TilePanel::Encoding;
    const int64_t k = kQKK;
    std::vector<std::byte> w(row_size(DType::Q8_0, k) * kTileRows);
    fill_random_blocks(DType::Q8_0, w.data(), k * kTileRows / kQK, 9);
    Aligned panel_memory(TilePanel::bytes(k));
    TilePanel panel = TilePanel::at(panel_memory.get(), k);
    tiles.decode[static_cast<int>(DType::Q8_0)](w.data(), row_size(DType::Q8_0, k), kTileRows, k, panel);
    EXPECT_FALSE(panel.has_offsets);
    EXPECT_TRUE(panel.pairs);
    EXPECT_EQ(panel.encoding, avx2 ? Encoding::Signed : Encoding::Plus128);  // 8-bit values span 255
    std::vector<std::byte> w6(row_size(DType::Q6_K, k) * kTileRows);
    fill_random_blocks(DType::Q6_K, w6.data(), kTileRows, 10);
    tiles.decode[static_cast<int>(DType::Q6_K)](w6.data(), row_size(DType::Q6_K, k), kTileRows, k, panel);
    EXPECT_FALSE(panel.pairs);  // q6_K scales every 16 values
    EXPECT_EQ(panel.integer_scales, avx2);
    EXPECT_EQ(panel.has_bias, avx2);  // -32 * scale, after narrowing to q + 32
    EXPECT_FALSE(panel.has_mins);
    EXPECT_EQ(panel.encoding, avx2 ? Encoding::Unsigned : Encoding::Plus128);
    if (avx2) {
        EXPECT_EQ(panel.largest, 63);
    }
    std::vector<std::byte> w4(row_size(DType::Q4_K, k) * 3);
    fill_random_blocks(DType::Q4_K, w4.data(), 3, 11);
    tiles.decode[static_cast<int>(DType::Q4_K)](w4.data(), row_size(DType::Q4_K, k), 3, k, panel);
    EXPECT_EQ(avx2 ? panel.has_mins : panel.has_offsets, true);  // its minima
    EXPECT_TRUE(panel.pairs);
    EXPECT_EQ(panel.integer_scales, avx2);
    EXPECT_FALSE(panel.has_bias);
    EXPECT_EQ(panel.encoding, avx2 ? Encoding::Unsigned : Encoding::Plus128);
    if (avx2) {
        EXPECT_EQ(panel.largest, 15);
    }
}

// AVX2 adds vpmaddubsw's 16-bit results before widening them, as many as the panel's largest byte
// allows: panels of nothing but their variant's largest value (and signed panels of -128 and 127)
// against activations of nothing but +-127 must give the exact product, every 16-bit lane at its
// bound. One more addition per widening than allowed would saturate.
TEST(QuantTilesAvx2, LargestValuesAgainstLargestActivationsDoNotSaturate) {
    if (!isa_supported(Isa::Avx2)) GTEST_SKIP() << "this CPU has no AVX2";
    const QuantTiles& tiles = quant_tiles_avx2();
    const int64_t k = 2 * kQKK, columns = 8;
    Aligned column_memory(TileColumns::bytes(k, columns, 1));
    const TileColumns cols = TileColumns::at(column_memory.get(), k, columns, 1, DType::Q4_0);
    float step = 0.0f;
    for (int64_t c = 0; c < columns; ++c) {
        // Every activation +-1 (column by column), so q = +-127 with d ~ 1 / 127 (rounded to f16).
        const std::vector<float> x(static_cast<size_t>(k), c % 2 == 0 ? 1.0f : -1.0f);
        std::vector<std::byte> blocks(activation_row_bytes(DType::Q4_0, k));
        quant_dot().quantize_activations(DType::Q4_0, x.data(), blocks.data(), k);
        const auto* first = reinterpret_cast<const BlockQ8Sum*>(blocks.data());
        ASSERT_EQ(first->qs[0], c % 2 == 0 ? 127 : -127);
        step = first->d;
        cols.set_column(c, blocks.data());
    }
    Aligned panel_memory(TilePanel::bytes(k));
    TilePanel panel = TilePanel::at(panel_memory.get(), k);
    struct Case {
        TilePanel::Encoding encoding;
        int byte;  // every byte of the panel (as int8 for Signed)
    };
    const std::vector<Case> cases = {
        {TilePanel::Encoding::Unsigned, 1},   {TilePanel::Encoding::Unsigned, 15}, {TilePanel::Encoding::Unsigned, 16},
        {TilePanel::Encoding::Unsigned, 31},  {TilePanel::Encoding::Unsigned, 32}, {TilePanel::Encoding::Unsigned, 63},
        {TilePanel::Encoding::Unsigned, 64},  {TilePanel::Encoding::Unsigned, 127}, {TilePanel::Encoding::Signed, -128},
        {TilePanel::Encoding::Signed, 127},
    };
    for (const Case& c : cases) {
        for (const bool pairs : {false, true}) {
            std::memset(panel.q, c.byte & 0xFF, static_cast<size_t>(k * kTileRows));
            for (int64_t i = 0; i < k / kTileGroup * kTileRows; ++i) {
                panel.scale[i] = 1.0f;
                panel.offset[i] = 0.0f;
            }
            panel.encoding = c.encoding;
            panel.largest = c.encoding == TilePanel::Encoding::Unsigned ? c.byte : 127;
            panel.has_offsets = false;
            panel.pairs = pairs;
            std::vector<float> out(static_cast<size_t>(kTileRows * columns));
            tiles.product(panel, cols, 0, static_cast<int>(columns), kTileRows, out.data(), kTileRows);
            for (int64_t j = 0; j < columns; ++j) {
                const double want = static_cast<double>(k) * c.byte * (j % 2 == 0 ? 127 : -127) * step;
                for (int r = 0; r < kTileRows; ++r) {
                    ASSERT_NEAR(out[static_cast<size_t>(j * kTileRows + r)], want, 1e-5 * std::fabs(want))
                        << "byte " << c.byte << (pairs ? " (pairs)" : "") << ", column " << j << ", row " << r;
                }
            }
        }
    }
}

}  // namespace
}  // namespace xb::cpu_kernels
