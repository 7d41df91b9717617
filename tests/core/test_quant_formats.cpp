// The newer block formats (q2_K, q3_K, the IQ family, TQ, MXFP4, NVFP4) beyond the bit-exact
// dequantization of test_quant.cpp:
//   - the IQ codebooks and sign table equal the gguf package's (tests/data/quant/iq_grids.gguf);
//   - each format's integer units (decode_unit, what the CPU's and GPU's dot products read) give
//     the dequantized values;
//   (the quantizers without a gguf reference, q2_K, q3_K, iq4_nl and iq4_xs, are held to error bounds
//   with the other k-quants' in test_quant.cpp);
//   - the read-only formats refuse to be a conversion's destination, and random valid blocks are
//     finite, bounded and reproducible.
#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <random>
#include <string>
#include <vector>

#include "core/quant.hpp"
#include "core/quant_block_types.hpp"
#include "core/quant_random.hpp"
#include "formats/gguf.hpp"
#include "test_config_util.hpp"
#include "quant_test_util.hpp"
#include "test_values.hpp"

namespace xb {
namespace {

constexpr DType kNewFormats[] = {DType::Q2_K,   DType::Q3_K,  DType::IQ2_XXS, DType::IQ2_XS, DType::IQ2_S,
                                 DType::IQ3_XXS, DType::IQ3_S, DType::IQ1_S,  DType::IQ1_M,  DType::IQ4_NL,
                                 DType::IQ4_XS, DType::TQ1_0, DType::TQ2_0,   DType::MXFP4,  DType::NVFP4};

std::vector<float> read_f32(const GgufReader& reader, const std::string& name, int64_t& rows, int64_t& cols) {
    const GgufTensorInfo* info = reader.find_tensor(name);
    EXPECT_NE(info, nullptr) << name;
    if (info == nullptr) return {};
    cols = info->ne[0];
    rows = info->ne[1];
    auto bytes = reader.read_tensor(name, DType::F32, {cols, rows, 1, 1});
    EXPECT_TRUE(bytes.is_ok()) << bytes.status().to_string();
    if (!bytes.is_ok()) return {};
    std::vector<float> v(bytes->size() / sizeof(float));
    std::memcpy(v.data(), bytes->data(), bytes->size());
    return v;
}

template <typename T, size_t N>
void expect_grid(const GgufReader& reader, const char* type, const T (&table)[N], int dims, bool is_signed) {
    int64_t rows = 0, cols = 0;
    const std::vector<float> want = read_f32(reader, std::string("grid.") + type, rows, cols);
    ASSERT_EQ(rows, static_cast<int64_t>(N)) << type;
    ASSERT_EQ(cols, dims) << type;
    for (size_t i = 0; i < N; ++i) {
        for (int j = 0; j < dims; ++j) {
            const auto byte = static_cast<int>((static_cast<uint64_t>(table[i]) >> (8 * j)) & 0xFF);
            const int got = is_signed ? static_cast<int8_t>(byte) : byte;
            ASSERT_EQ(static_cast<float>(got), want[i * static_cast<size_t>(dims) + static_cast<size_t>(j)])
                << type << " entry " << i << " coordinate " << j;
        }
    }
}

TEST(TernaryDigits, PowersOfThreeAndEveryDigitOfEveryByte) {
    int power = 1;
    for (int j = 0; j < 5; ++j, power *= 3) EXPECT_EQ(xb::pow3_upto_81(j), power) << j;
    // A byte holding digits t_0..t_4 as ceil(sum t_i 3^(4-i) * 256 / 243) gives back digit j.
    for (int code = 0; code < 243; ++code) {
        const auto byte = static_cast<uint8_t>((code * 256 + 242) / 243);
        int rest = code;
        for (int j = 4; j >= 0; --j, rest /= 3) EXPECT_EQ(xb::ternary_digit(byte, xb::pow3_upto_81(j)), rest % 3) << code << " " << j;
    }
}

TEST(IqTables, CodebooksAndSignsAreTheGgufPackages) {
    auto reader = GgufReader::open(config::testing::data_path("quant/iq_grids.gguf"));
    ASSERT_TRUE(reader.is_ok()) << reader.status().to_string();
    expect_grid(*reader, "iq2_xxs", kIq2xxsGrid, 8, false);
    expect_grid(*reader, "iq2_xs", kIq2xsGrid, 8, false);
    expect_grid(*reader, "iq2_s", kIq2sGrid, 8, false);
    expect_grid(*reader, "iq3_xxs", kIq3xxsGrid, 4, false);
    expect_grid(*reader, "iq3_s", kIq3sGrid, 4, false);
    expect_grid(*reader, "iq1_s", kIq1sGrid, 8, true);
    int64_t rows = 0, cols = 0;
    const std::vector<float> ksigns = read_f32(*reader, "ksigns", rows, cols);
    ASSERT_EQ(ksigns.size(), 128u);
    for (int i = 0; i < 128; ++i) EXPECT_EQ(static_cast<float>(iq_sign_byte(i)), ksigns[static_cast<size_t>(i)]) << i;
}

// Random blocks, or quantized normal data for the formats with a quantizer: both must decode alike.
std::vector<std::byte> some_blocks(DType t, int64_t n, uint64_t seed) {
    std::vector<std::byte> w(row_size(t, n));
    fill_random_blocks(t, w.data(), n / blck_size(t), seed);
    return w;
}

// Every value of the row through its unit: scale * q + offset against the dequantized value.
template <typename Block>
void expect_units_match(DType t, const std::vector<std::byte>& w, const std::vector<float>& want, int64_t& checked) {
    const auto* blocks = reinterpret_cast<const Block*>(w.data());
    constexpr int kUnits = Block::kElems / kUnitValues;
    for (size_t b = 0; b < want.size() / Block::kElems; ++b) {
        for (int u = 0; u < kUnits; ++u) {
            QuantUnit unit;
            decode_unit(blocks[b], u, unit);
            for (int l = 0; l < kUnitValues; ++l) {
                const int h = l / 16;
                const float got = unit.scale[h] * static_cast<float>(unit.q[l]) + unit.offset[h];
                const float expect = want[b * Block::kElems + static_cast<size_t>(u * kUnitValues + l)];
                ASSERT_NEAR(got, expect, 2e-6f * std::fabs(expect) + 1e-30f)
                    << dtype_name(t) << " block " << b << " unit " << u << " value " << l;
                ++checked;
            }
        }
    }
}

class NewFormat : public testing::TestWithParam<DType> {};

TEST_P(NewFormat, UnitsGiveTheDequantizedValues) {
    const DType t = GetParam();
    const int64_t n = 4 * kQKK;
    const std::vector<std::byte> w = some_blocks(t, n, 5);
    std::vector<float> want(static_cast<size_t>(n));
    dequantize_row(t, w.data(), want.data(), n);
    int64_t checked = 0;
    with_block_type(
        t,
        [&]<typename Block>(BlockTag<Block>) {
            if constexpr (UnitBlock<Block>) expect_units_match<Block>(t, w, want, checked);
            return true;
        },
        false);
    EXPECT_EQ(checked, n) << dtype_name(t) << " has no units";
}

TEST_P(NewFormat, RandomBlocksAreFiniteBoundedAndReproducible) {
    const DType t = GetParam();
    const int64_t n = 8 * kQKK;
    const std::vector<std::byte> a = some_blocks(t, n, 42);
    EXPECT_EQ(a, some_blocks(t, n, 42));
    EXPECT_NE(a, some_blocks(t, n, 43));
    std::vector<float> v(static_cast<size_t>(n));
    dequantize_row(t, a.data(), v.data(), n);
    double sum_sq = 0;
    for (float x : v) {
        ASSERT_TRUE(std::isfinite(x)) << dtype_name(t);
        ASSERT_LE(std::fabs(x), 3.0f) << dtype_name(t);
        sum_sq += static_cast<double>(x) * x;
    }
    EXPECT_GT(sum_sq / static_cast<double>(n), 1e-3) << dtype_name(t) << ": values should not vanish";
}

// The read-only formats (as in ggml: their quantizers need an importance matrix) refuse to be made
// from f32; every format converts to f32 and f16.
TEST_P(NewFormat, ConversionsGoOnlyWhereTheFormatAllows) {
    const DType t = GetParam();
    const bool read_only = t == DType::IQ2_XXS || t == DType::IQ2_XS || t == DType::IQ2_S || t == DType::IQ3_XXS ||
                           t == DType::IQ3_S || t == DType::IQ1_S || t == DType::IQ1_M || t == DType::NVFP4;
    EXPECT_EQ(can_quantize(t), !read_only) << dtype_name(t);
    const int64_t n = kQKK;
    std::vector<float> x(static_cast<size_t>(n), 0.5f);
    std::vector<std::byte> blocks = some_blocks(t, n, 1);
    EXPECT_EQ(convert_row(DType::F32, x.data(), t, blocks.data(), n), !read_only) << dtype_name(t);
    std::vector<uint16_t> half(static_cast<size_t>(n));
    EXPECT_TRUE(convert_row(t, blocks.data(), DType::F16, half.data(), n)) << dtype_name(t);
    EXPECT_EQ(dtype_from_name(dtype_name(t)), t);
}

std::string type_param_name(const testing::TestParamInfo<DType>& info) { return dtype_name(info.param); }
INSTANTIATE_TEST_SUITE_P(Types, NewFormat, testing::ValuesIn(kNewFormats), type_param_name);

}  // namespace
}  // namespace xb
