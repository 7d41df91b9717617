// The math the GPU's quantized products run (core/quant_int_dot.hpp and dequantize_part in
// core/quant_blocks.hpp, XB_HD), run here on the CPU: the same source the CUDA kernels compile.
//   - the integer unit dots of every weight type, summed over a row, against the float64 dot of the
//     dequantized weights with the dequantized 8-bit activations, for one and several columns;
//   - the 8-bit activation rounding against the CPU's own activation quantizer, bit for bit;
//   - dequantize_part against dequantize_block, bit for bit.
#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <random>
#include <vector>

#include "core/quant.hpp"
#include "core/quant_block_types.hpp"
#include "core/quant_fit.hpp"
#include "core/quant_int_dot.hpp"
#include "core/quant_random.hpp"
#include "cpu_kernels/quant_dot.hpp"
#include "quant_test_util.hpp"

namespace xb {
namespace {

constexpr DType kWeightTypes[] = {
    DType::Q4_0,   DType::Q4_1,   DType::Q5_0,   DType::Q5_1,  DType::Q8_0,   DType::Q4_K,    DType::Q5_K,
    DType::Q6_K,   DType::Q8_K,   DType::Q2_K,   DType::Q3_K,  DType::IQ2_XXS, DType::IQ2_XS, DType::IQ2_S,
    DType::IQ3_XXS, DType::IQ3_S, DType::IQ1_S,  DType::IQ1_M, DType::IQ4_NL, DType::IQ4_XS,  DType::TQ1_0,
    DType::TQ2_0,  DType::MXFP4,  DType::NVFP4};

// Normal values whose scale changes from block to block (some blocks tiny, some large), so that
// per-block scales and minima matter.
std::vector<float> varied_data(size_t n, uint32_t seed) {
    std::mt19937 rng(seed);
    std::normal_distribution<float> dist(0.0f, 1.0f);
    std::uniform_real_distribution<float> scale(-3.0f, 2.0f);
    std::vector<float> v(n);
    float s = 1.0f;
    for (size_t i = 0; i < n; ++i) {
        if (i % kQK == 0) s = std::pow(10.0f, scale(rng));
        v[i] = dist(rng) * s + (i % 3 == 0 ? 0.3f * s : 0.0f);  // an offset, for the types with a minimum
    }
    return v;
}

// Columns of activations in the GPU's layout: values, then scales, each column after the other.
struct Q8Columns {
    std::vector<int8_t> values;
    std::vector<Q8Scale> scales;
    int64_t k = 0;
};

Q8Columns quantize_columns(const std::vector<float>& x, int64_t k, int columns) {
    Q8Columns c;
    c.k = k;
    c.values.resize(static_cast<size_t>(k * columns));
    c.scales.resize(static_cast<size_t>(k / kQ8Block * columns));
    for (int64_t blk = 0; blk < k / kQ8Block * columns; ++blk) {
        const float* xb = x.data() + blk * kQ8Block;
        // The GPU's warp max of magnitude_bits: an integer max, the same in any order.
        const float d = q8_step(largest_magnitude(xb, kQ8Block));
        int sum = 0;
        for (int j = 0; j < kQ8Block; ++j) {
            const int q = q8_round(xb[j], q8_inverse_step(d));
            c.values[static_cast<size_t>(blk * kQ8Block + j)] = static_cast<int8_t>(q);
            sum += q;
        }
        c.scales[static_cast<size_t>(blk)] = q8_stored_scale(d, sum);
    }
    return c;
}

template <typename Block, int kCols>
void unit_dots(const std::byte* row, int64_t k, const Q8Columns& act, float (&sum)[kCols]) {
    constexpr int kElems = kBlockElems<Block>;
    Q8Cols cols;
    cols.qs = act.values.data();
    cols.ds = act.scales.data();
    cols.qs_stride = act.k;
    cols.ds_stride = act.k / kQ8Block;
    for (int64_t b = 0; b < k / kElems; ++b) {
        const auto* block = reinterpret_cast<const uint8_t*>(row) + b * static_cast<int64_t>(sizeof(Block));
        for (int u = 0; u < Q8Dot<Block>::kUnits; ++u) Q8Dot<Block>::template dot<kCols>(block, u, cols, b * kElems, sum);
    }
}

template <int kCols>
void row_dots(DType t, const std::byte* row, int64_t k, const Q8Columns& act, float (&sum)[kCols]) {
    const bool known = with_block_type(
        t,
        [&]<typename Block>(BlockTag<Block>) {
            unit_dots<Block, kCols>(row, k, act, sum);
            return true;
        },
        false);
    EXPECT_TRUE(known) << "not a quantized type";
}

// A row of k weights of type t: `values` quantized, or random valid blocks for the read-only formats.
std::vector<std::byte> weight_row(DType t, const std::vector<float>& values, uint32_t seed) {
    const auto k = static_cast<int64_t>(values.size());
    std::vector<std::byte> w(row_size(t, k));
    if (can_quantize(t)) {
        quantize_row(t, values.data(), w.data(), k);
    } else {
        fill_random_blocks(t, w.data(), k / blck_size(t), seed);
    }
    return w;
}

// Checks kCols columns at once against the float64 dot of the dequantized operands: the integer
// sums are exact, so only the per-block float scaling rounds.
template <int kCols>
void expect_unit_dots_match(DType t, uint32_t seed) {
    const int64_t k = 3 * kQKK;
    const std::vector<std::byte> w = weight_row(t, varied_data(static_cast<size_t>(k), seed), seed);
    std::vector<float> wf(static_cast<size_t>(k));
    dequantize_row(t, w.data(), wf.data(), k);
    auto x = varied_data(static_cast<size_t>(k * kCols), seed + 100);
    for (int j = 0; j < kQ8Block; ++j) x[static_cast<size_t>(kQ8Block + j)] = 0.0f;  // an all-zero block: d = 0
    const Q8Columns act = quantize_columns(x, k, kCols);

    float got[kCols] = {};
    row_dots<kCols>(t, w.data(), k, act, got);
    for (int c = 0; c < kCols; ++c) {
        double want = 0, norm = 0;
        for (int64_t i = 0; i < k; ++i) {
            const Q8Scale s = act.scales[static_cast<size_t>((c * k + i) / kQ8Block)];
            const double a = static_cast<double>(s.d) * act.values[static_cast<size_t>(c * k + i)];
            const double m = xbt::block_minimum(t, w, i / kQK);
            if (i % kQK == 0) want += m * s.s;
            want += (static_cast<double>(wf[static_cast<size_t>(i)]) - m) * a;
            norm += std::fabs(static_cast<double>(wf[static_cast<size_t>(i)]) * a);
        }
        EXPECT_NEAR(got[c], want, 2e-6 * norm) << dtype_name(t) << " column " << c << " of " << kCols;
        EXPECT_GT(norm, 0.0);
    }
}

class QuantIntDot : public testing::TestWithParam<DType> {};

TEST_P(QuantIntDot, UnitsSumToTheDequantizedDot) {
    expect_unit_dots_match<1>(GetParam(), 11);
    expect_unit_dots_match<3>(GetParam(), 12);
    expect_unit_dots_match<8>(GetParam(), 13);
}

// A wrong nibble, bit plane or scale index shows: one weight changed changes the unit dot by its
// own product only, and every value of the row is reached by exactly one unit.
TEST_P(QuantIntDot, EveryValueIsReachedByOneUnit) {
    const DType t = GetParam();
    const int64_t k = kQKK;
    const int64_t n = k / blck_size(t);
    // Activations: one-hot columns (1 at position p), quantized to q = 127 with d = 1/127 as stored
    // in f16 (so the unit dot is the weight times d * 127, a little off 1).
    for (int64_t p : {int64_t{0}, int64_t{5}, int64_t{16}, int64_t{31}, int64_t{47}, int64_t{100}, int64_t{128},
                      int64_t{200}, int64_t{255}}) {
        std::vector<float> x(static_cast<size_t>(k), 0.0f);
        x[static_cast<size_t>(p)] = 1.0f;
        const Q8Columns act = quantize_columns(x, k, 1);
        const std::vector<std::byte> w =
            weight_row(t, varied_data(static_cast<size_t>(k), static_cast<uint32_t>(p + 7)), static_cast<uint32_t>(p));
        std::vector<float> wf(static_cast<size_t>(k));
        dequantize_row(t, w.data(), wf.data(), k);
        float got[1] = {};
        row_dots<1>(t, w.data(), k, act, got);
        const Q8Scale scale = act.scales[static_cast<size_t>(p / kQ8Block)];
        const double a = static_cast<double>(scale.d) * act.values[static_cast<size_t>(p)];
        const double m = xbt::block_minimum(t, w, p / kQK);  // its term meets the stored sum s
        const double want = (wf[static_cast<size_t>(p)] - m) * a + m * scale.s;
        EXPECT_NEAR(got[0], want, 1e-5 * std::fabs(want) + 1e-30) << dtype_name(t) << " value " << p << " of " << n << " blocks";
    }
}

std::string type_name(const testing::TestParamInfo<DType>& info) { return dtype_name(info.param); }
INSTANTIATE_TEST_SUITE_P(Types, QuantIntDot, testing::ValuesIn(kWeightTypes), type_name);

// The GPU's activation blocks round as the CPU's q8 blocks do: the same steps, values and sums.
TEST(QuantIntDot, ActivationRoundingIsTheCpus) {
    const int64_t k = 8 * kQ8Block;
    auto x = varied_data(static_cast<size_t>(k), 3);
    x[3] = 0.5f / 127.0f;  // ties between steps, rounded away from zero by both
    x[40] = -1e-38f;
    for (int j = 0; j < kQ8Block; ++j) x[static_cast<size_t>(2 * kQ8Block + j)] = 0.0f;
    const Q8Columns gpu = quantize_columns(x, k, 1);
    std::vector<cpu_kernels::BlockQ8Sum> cpu(static_cast<size_t>(k / kQ8Block));
    cpu_kernels::quant_dot(Isa::Scalar).quantize_q8sum(x.data(), cpu.data(), k);
    for (size_t b = 0; b < cpu.size(); ++b) {
        EXPECT_EQ(gpu.scales[b].d, cpu[b].d) << "block " << b;
        EXPECT_EQ(gpu.scales[b].s, cpu[b].s) << "block " << b;
        for (int j = 0; j < kQ8Block; ++j) EXPECT_EQ(gpu.values[b * kQ8Block + static_cast<size_t>(j)], cpu[b].qs[j]);
    }
}

// A block's largest magnitude (the CPU's and, as magnitude_bits under a warp max, the GPU's) is NaN
// when any value is, wherever it is, and infinite for an infinity: the block's step carries it
// into every product the block enters.
TEST(QuantIntDot, LargestMagnitudeKeepsNaNAndInfinity) {
    auto x = varied_data(kQ8Block, 5);
    float want = 0.0f;
    for (float v : x) want = std::fmax(want, std::fabs(v));
    EXPECT_EQ(largest_magnitude(x.data(), kQ8Block), want);
    for (int at = 0; at < kQ8Block; ++at) {
        for (const float special : {NAN, -NAN, INFINITY, -INFINITY}) {
            std::vector<float> poisoned = x;
            poisoned[static_cast<size_t>(at)] = special;
            const float amax = largest_magnitude(poisoned.data(), kQ8Block);
            if (std::isnan(special)) {
                EXPECT_TRUE(std::isnan(amax) && std::isnan(q8_step(amax))) << at;
            } else {
                EXPECT_EQ(amax, INFINITY) << at;
            }
        }
    }
}

TEST(QuantIntDot, RoundingClampsAndKeepsZero) {
    EXPECT_EQ(q8_round(1.0f, 127.0f), 127);
    EXPECT_EQ(q8_round(-1.0f, 127.0f), -127);
    EXPECT_EQ(q8_round(2.0f, 127.0f), 127);  // past the step's range: clamped
    EXPECT_EQ(q8_round(0.5f, 1.0f), 1);      // half away from zero
    EXPECT_EQ(q8_round(-0.5f, 1.0f), -1);
    EXPECT_EQ(q8_round(NAN, 1.0f), -127);
    EXPECT_EQ(q8_inverse_step(0.0f), 0.0f);
    EXPECT_EQ(q8_round(5.0f, q8_inverse_step(q8_step(0.0f))), 0);
}

TEST(QuantIntDot, ByteDotsMatchTheirDefinition) {
    std::mt19937 rng(9);
    for (int i = 0; i < 1000; ++i) {
        const auto a = static_cast<int>(rng());
        const auto b = static_cast<int>(rng());
        int want = 17;
        for (int j = 0; j < 4; ++j) {
            want += static_cast<int8_t>(static_cast<uint32_t>(a) >> (8 * j)) * static_cast<int8_t>(static_cast<uint32_t>(b) >> (8 * j));
        }
        ASSERT_EQ(dot4_i8(a, b, 17), want);
    }
    EXPECT_EQ(dot4_i8(kOnes8, static_cast<int>(0xFF7F0180u), 0), -1 + 127 + 1 - 128);
    EXPECT_EQ(fifth_bits(0xFu), 0x10101010);
    EXPECT_EQ(fifth_bits(0x5u), 0x00100010);
    EXPECT_EQ(byte_bit_to_4(static_cast<int>(0x04000400u), 2), 0x10001000);
    EXPECT_EQ(byte_bits2_to_4(static_cast<int>(0xC0300C03u), 2), 0x00003000);  // byte 1's bits 2, 3
}

// --- dequantize_part ---------------------------------------------------------------------------------------

template <typename Block>
void expect_parts_match_block(DType t, uint32_t seed) {
    constexpr int kElems = kBlockElems<Block>;
    const auto x = varied_data(static_cast<size_t>(kElems) * 4, seed);
    std::vector<Block> blocks(4);
    quantize_row(t, x.data(), blocks.data(), kElems * 4);
    for (const Block& b : blocks) {
        float whole[kElems];
        dequantize_block(b, whole);
        for (int part = 0; part < kElems / 16; ++part) {
            float piece[16];
            dequantize_part(b, part, piece);
            for (int j = 0; j < 16; ++j) {
                uint32_t want, got;
                std::memcpy(&want, &whole[16 * part + j], 4);
                std::memcpy(&got, &piece[j], 4);
                ASSERT_EQ(got, want) << dtype_name(t) << " part " << part << " value " << j;
            }
        }
    }
}

TEST(DequantizePart, GivesTheBlocksBits) {
    expect_parts_match_block<BlockQ4_0>(DType::Q4_0, 1);
    expect_parts_match_block<BlockQ4_1>(DType::Q4_1, 2);
    expect_parts_match_block<BlockQ5_0>(DType::Q5_0, 3);
    expect_parts_match_block<BlockQ5_1>(DType::Q5_1, 4);
    expect_parts_match_block<BlockQ8_0>(DType::Q8_0, 5);
    expect_parts_match_block<BlockQ4_K>(DType::Q4_K, 6);
    expect_parts_match_block<BlockQ5_K>(DType::Q5_K, 7);
    expect_parts_match_block<BlockQ6_K>(DType::Q6_K, 8);
    expect_parts_match_block<BlockQ8_K>(DType::Q8_K, 9);
}

}  // namespace
}  // namespace xb
